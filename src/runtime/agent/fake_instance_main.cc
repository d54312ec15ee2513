// sluice-agent-fake-instance: a tiny instance program for the agent daemon's tests (no GPU
// work, no SDK). Serves on $PORT: GET /v2/health/ready and /v2/health/live (200),
// GET /sluice/v1/stats ({"in_flight": n, ...}), POST /fake/in_flight?n=N (sets n),
// GET /fake/env ({"argv": [...], "env": {...}}), POST /crash?code=C (answers, then exits with C).
// SIGTERM or SIGINT: exits 0.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "nlohmann/json.hpp"
#include "runtime/http/http.h"

extern char** environ;

namespace {

using sluice::runtime::http::JsonResponse;
using sluice::runtime::http::Request;
using sluice::runtime::http::Responder;

std::atomic<int64_t> g_in_flight{0};

sluice::runtime::http::Router MakeRouter(const std::vector<std::string>& argv,
                                         sluice::runtime::http::EventLoop& loop) {
  sluice::runtime::http::Router r;
  auto ok = [](Request&, Responder respond) { respond(JsonResponse(200, "{}")); };
  r.Handle("GET", "/v2/health/ready", ok);
  r.Handle("GET", "/v2/health/live", ok);
  r.Handle("GET", "/sluice/v1/stats", [](Request&, Responder respond) {
    respond(JsonResponse(200, nlohmann::json{{"in_flight", g_in_flight.load()},
                                             {"served", 0}, {"batches", 0}}.dump()));
  });
  r.Handle("POST", "/fake/in_flight", [](Request& req, Responder respond) {
    int64_t n = 0;
    if (!absl::SimpleAtoi(req.query_param("n"), &n)) n = 0;
    g_in_flight = n;
    respond(JsonResponse(200, "{}"));
  });
  r.Handle("GET", "/fake/env", [argv](Request&, Responder respond) {
    nlohmann::json env = nlohmann::json::object();
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string entry = *e;
      const size_t eq = entry.find('=');
      env[entry.substr(0, eq)] = eq == std::string::npos ? "" : entry.substr(eq + 1);
    }
    respond(JsonResponse(200, nlohmann::json{{"argv", argv}, {"env", env}}.dump()));
  });
  r.Handle("POST", "/crash", [&loop](Request& req, Responder respond) {
    int code = 1;
    if (!absl::SimpleAtoi(req.query_param("code"), &code)) code = 1;
    respond(JsonResponse(200, "{}"));
    loop.RunAt(loop.Now() + absl::Milliseconds(20), [code] { _exit(code); });
  });
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);  // before any thread starts: sigwait below
  const char* port_env = std::getenv("PORT");
  int port = 0;
  if (port_env == nullptr || !absl::SimpleAtoi(port_env, &port)) {
    std::fprintf(stderr, "sluice-agent-fake-instance: PORT is not set\n");
    return 2;
  }
  auto loop = sluice::runtime::http::EventLoop::Create();
  if (!loop.ok()) return 3;
  sluice::runtime::http::ServerOptions o;
  o.port = port;
  auto server = sluice::runtime::http::Server::Start(
      **loop, o, MakeRouter(std::vector<std::string>(argv, argv + argc), **loop));
  if (!server.ok()) {
    std::fprintf(stderr, "sluice-agent-fake-instance: %s\n",
                 std::string(server.status().message()).c_str());
    return 4;
  }
  std::printf("fake instance listening on %d\n", port);
  std::fflush(stdout);
  int sig = 0;
  sigwait(&set, &sig);
  (*server)->Stop();
  (*loop)->Stop();
  return 0;
}
