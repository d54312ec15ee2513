// openai_fake_platform: a gateway (the real GatewayDaemon) in front of a fake controller and a
// fake LLM instance (src/runtime/gateway/testing), for the openai npm client test. Publishes one
// LLM function `llm-demo` (KV cache of 4096 tokens, 5 ms per token), prints "PORT <gateway port>"
// on stdout and serves until stdin closes. Used by tests/openai/run.sh; single-threaded main.
#include <iostream>
#include <string>

#include "nlohmann/json.hpp"
#include "runtime/gateway/gateway_daemon.h"
#include "runtime/gateway/testing/fake_llm_instance.h"
#include "runtime/gateway/testing/fake_platform.h"

int main() {
  using namespace sluice::runtime;
  testing::FakeController controller;
  testing::FakeLlmInstance instance(1, {.kv_capacity_tokens = 4096,
                                        .token_delay = absl::Milliseconds(5)});
  nlohmann::json route = testing::RouteJson(
      "llm-demo", 8, 0,
      nlohmann::json::array({{{"id", 1}, {"url", instance.url()}, {"capacity_rps", 10},
                              {"state", "ready"}}}));
  route["kind"] = "llm";
  controller.SetFunctions(nlohmann::json::array({route}));
  GatewayOptions o;
  o.port = 0;
  o.controller = controller.url();
  o.routes_poll = absl::Milliseconds(50);
  auto gateway = GatewayDaemon::Start(o);
  if (!gateway.ok()) {
    std::cerr << "gateway: " << gateway.status() << "\n";
    return 1;
  }
  while ((*gateway)->routes_version() < 1) absl::SleepFor(absl::Milliseconds(10));
  std::cout << "PORT " << (*gateway)->port() << std::endl;
  std::string line;
  while (std::getline(std::cin, line)) {
  }
  return 0;
}
