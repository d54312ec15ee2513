// sluice-example-llm: an emulated LLM function (not a real model): per-token timing from
// core::BuiltinLlmModel, continuous batching, KV capacity enforced, deterministic words; serves
// the LLM instance API (README.md) on $PORT until SIGTERM/SIGINT.
// Flags: --model M --gpu G --tp N --role prefill|decode|colocated --kv-scale X --time-scale X;
// $SLUICE_LLM_MODEL and $SLUICE_LLM_ROLE give defaults for --model and --role.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/numbers.h"
#include "llm_server.h"
#include "runtime/sdk/shutdown.h"

namespace {

using sluice::examples::LlmServerOptions;

bool ParseFlag(const std::string& flag, const std::string& value, LlmServerOptions& o) {
  if (flag == "--model")
    return o.model = value, true;
  if (flag == "--gpu")
    return o.gpu = value, true;
  if (flag == "--tp")
    return absl::SimpleAtoi(value, &o.tp);
  if (flag == "--kv-scale")
    return absl::SimpleAtod(value, &o.kv_scale);
  if (flag == "--time-scale")
    return absl::SimpleAtod(value, &o.time_scale);
  if (flag == "--role") {
    auto role = sluice::examples::ParseLlmRole(value);
    if (role.ok())
      o.role = *role;
    return role.ok();
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  LlmServerOptions o;
  if (const char* m = std::getenv("SLUICE_LLM_MODEL"))
    o.model = m;
  // The controller sets the role both ways for a disaggregated function (--role wins).
  if (const char* r = std::getenv("SLUICE_LLM_ROLE"); r != nullptr && !ParseFlag("--role", r, o)) {
    std::fprintf(stderr, "sluice-example-llm: bad $SLUICE_LLM_ROLE '%s'\n", r);
    return 2;
  }
  for (int i = 1; i < argc; i += 2) {
    if (i + 1 >= argc || !ParseFlag(argv[i], argv[i + 1], o)) {
      std::fprintf(stderr, "sluice-example-llm: bad flag '%s' (flags: --model --gpu --tp --role "
                           "--kv-scale --time-scale, each with a value)\n", argv[i]);
      return 2;
    }
  }
  const char* port = std::getenv("PORT");
  if (port == nullptr || !absl::SimpleAtoi(port, &o.port) || o.port < 0 || o.port > 65535) {
    std::fprintf(stderr, "sluice-example-llm: $PORT must be set to a port in [0, 65535]\n");
    return 1;
  }
  if (const char* host = std::getenv("SLUICE_HOST"))
    o.host = host;
  if (absl::Status s = sluice::runtime::InstallShutdownHandlers(); !s.ok()) {
    std::fprintf(stderr, "sluice-example-llm: %s\n", std::string(s.message()).c_str());
    return 1;
  }
  auto loop = sluice::runtime::http::EventLoop::Create();
  if (!loop.ok()) {
    std::fprintf(stderr, "sluice-example-llm: %s\n", std::string(loop.status().message()).c_str());
    return 1;
  }
  auto server = sluice::examples::LlmServer::Start(**loop, o);
  if (!server.ok()) {
    std::fprintf(stderr, "sluice-example-llm: %s\n",
                 std::string(server.status().message()).c_str());
    return 2;
  }
  std::printf("sluice-example-llm: %s on %s, role %s, port %d\n", o.model.c_str(), o.gpu.c_str(),
              sluice::examples::LlmRoleName(o.role), (*server)->port());
  std::fflush(stdout);
  sluice::runtime::WaitForShutdown();
  server->reset();
  (*loop)->Stop();
  return 0;
}
