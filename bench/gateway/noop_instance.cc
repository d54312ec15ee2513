// sluice-bench-noop: a no-op function instance for the gateway benchmark (scripts/bench-gateway).
// Serves the Instance API's hot paths with fixed small JSON (/sluice/v1/batch, /v2/models/x/infer,
// /v2/health/ready) and, so the gateway needs no controller, a one-function route table
// (/internal/v1/routes) pointing at itself, plus no-op /internal/v1/load and /internal/v1/wake.
// Usage: sluice-bench-noop PORT [MAX_BATCH] [MAX_QUEUE_DELAY_MS]. Runs until SIGINT/SIGTERM.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"

#include "nlohmann/json.hpp"
#include "runtime/http/http.h"

namespace {

using sluice::runtime::http::JsonResponse;
using sluice::runtime::http::Request;
using sluice::runtime::http::Responder;

constexpr char kOutput[] =
    R"({"model_name":"noop","outputs":[{"name":"y","shape":[1],"datatype":"FP32","data":[0]}]})";

// Number of elements of the batch's "requests" array (0 for a malformed body).
int CountRequests(const std::string& body) {
  const nlohmann::json doc = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object() || !doc.contains("requests") || !doc["requests"].is_array())
    return 0;
  return static_cast<int>(doc["requests"].size());
}

std::string Routes(int port, int max_batch, int delay_ms) {
  nlohmann::json inst = {{"id", 1},
                         {"url", absl::StrCat("127.0.0.1:", port)},
                         {"capacity_rps", 100000},
                         {"state", "ready"}};
  nlohmann::json route = {{"name", "noop"},
                          {"kind", "inference"},
                          {"state", "ready"},
                          {"max_batch", max_batch},
                          {"max_queue_delay_ms", delay_ms},
                          {"queue_max", 4096},
                          {"timeout_ms", 30000},
                          {"desired", 1},
                          {"instances", {inst}}};
  return nlohmann::json{{"version", 1}, {"functions", {route}}}.dump();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s PORT [MAX_BATCH] [MAX_QUEUE_DELAY_MS]\n", argv[0]);
    return 2;
  }
  const int port = std::atoi(argv[1]);
  const int max_batch = argc > 2 ? std::atoi(argv[2]) : 8;
  const int delay_ms = argc > 3 ? std::atoi(argv[3]) : 0;
  namespace http = sluice::runtime::http;
  http::Router router;
  router.Handle("POST", "/sluice/v1/batch", [](Request& req, Responder respond) {
    const int n = CountRequests(req.body);
    std::string body = R"({"responses":[)";
    for (int i = 0; i < n; ++i)
      absl::StrAppend(&body, i == 0 ? "" : ",", kOutput);
    body += R"(],"exec_ms":0})";
    respond(JsonResponse(200, std::move(body)));
  });
  router.Handle("POST", "/v2/models/{name}/infer",
                [](Request&, Responder respond) { respond(JsonResponse(200, kOutput)); });
  router.Handle("GET", "/v2/health/ready",
                [](Request&, Responder respond) { respond(JsonResponse(200, "{}")); });
  const std::string routes = Routes(port, max_batch, delay_ms);
  router.Handle("GET", "/internal/v1/routes",
                [routes](Request&, Responder respond) { respond(JsonResponse(200, routes)); });
  for (const char* path : {"/internal/v1/load", "/internal/v1/wake"}) {
    router.Handle("POST", path,
                  [](Request&, Responder respond) { respond(JsonResponse(200, "{}")); });
  }
  auto loop = http::EventLoop::Create();
  if (!loop.ok()) {
    std::fprintf(stderr, "%s\n", loop.status().ToString().c_str());
    return 1;
  }
  http::ServerOptions o;
  o.port = port;
  auto server = http::Server::Start(**loop, o, std::move(router));
  if (!server.ok()) {
    std::fprintf(stderr, "%s\n", server.status().ToString().c_str());
    return 1;
  }
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  int sig = 0;
  sigwait(&set, &sig);
  (*server)->Stop();
  (*loop)->Stop();
  return 0;
}
