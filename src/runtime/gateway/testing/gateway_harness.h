// Test harness for the gateway: a FakeController, a GatewayDaemon polling it every 10 ms, and
// blocking client helpers (KServe infer, GET). Waits are bounded polls, never timing assertions.
#ifndef SLUICE_RUNTIME_GATEWAY_TESTING_GATEWAY_HARNESS_H_
#define SLUICE_RUNTIME_GATEWAY_TESTING_GATEWAY_HARNESS_H_

#include <functional>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

#include "runtime/gateway/gateway_daemon.h"
#include "runtime/gateway/testing/fake_platform.h"
#include "runtime/http/http.h"

namespace sluice::runtime::testing {

// Polls `pred` every 2 ms for up to `limit`; true when it held.
inline bool WaitFor(const std::function<bool()>& pred, absl::Duration limit = absl::Seconds(10)) {
  const auto end = std::chrono::steady_clock::now() + absl::ToChronoNanoseconds(limit);
  while (std::chrono::steady_clock::now() < end) {
    if (pred())
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return pred();
}

class GatewayHarness {
 public:
  explicit GatewayHarness(int max_retries = 2, int max_batches_per_instance = 2) {
    GatewayOptions o;
    o.port = 0;
    o.controller = controller.url();
    o.routes_poll = absl::Milliseconds(10);
    o.load_report = absl::Milliseconds(50);
    o.max_retries = max_retries;
    o.max_batches_per_instance = max_batches_per_instance;
    auto d = GatewayDaemon::Start(o);
    EXPECT_TRUE(d.ok()) << d.status();
    gateway = *std::move(d);
  }

  // Publishes `functions` and waits until the gateway applied that table.
  void SetRoutes(nlohmann::json functions) {
    controller.SetFunctions(std::move(functions));
    ++version_;
    ASSERT_TRUE(WaitFor([&] { return gateway->routes_version() >= version_; }));
  }

  http::Endpoint endpoint() const { return {"127.0.0.1", gateway->port()}; }

  absl::StatusOr<http::Response> Infer(const std::string& function, const std::string& body,
                                       int timeout_ms = 0) const {
    http::Request req;
    req.method = "POST";
    req.target = absl::StrCat("/v2/models/", function, "/infer");
    req.headers.emplace_back("content-type", "application/json");
    if (timeout_ms > 0)
      req.headers.emplace_back("sluice-timeout-ms", std::to_string(timeout_ms));
    req.body = body;
    return http::Fetch(endpoint(), std::move(req), absl::Seconds(20));
  }

  std::future<absl::StatusOr<http::Response>> InferAsync(const std::string& function,
                                                         const std::string& body,
                                                         int timeout_ms = 0) const {
    return std::async(std::launch::async, [=, this] { return Infer(function, body, timeout_ms); });
  }

  absl::StatusOr<http::Response> Get(const std::string& path) const {
    http::Request req;
    req.method = "GET";
    req.target = path;
    return http::Fetch(endpoint(), std::move(req), absl::Seconds(10));
  }

  // The value of a metric sample line starting with `prefix` (e.g. a name with its labels).
  double Metric(const std::string& prefix) const {
    const std::string text = gateway->RenderMetrics();
    size_t at = text.find("\n" + prefix + " ");
    if (at == std::string::npos)
      return -1;
    return std::stod(text.substr(at + prefix.size() + 2));
  }

  FakeController controller;
  std::unique_ptr<GatewayDaemon> gateway;

 private:
  int64_t version_ = 0;
};

}  // namespace sluice::runtime::testing

#endif  // SLUICE_RUNTIME_GATEWAY_TESTING_GATEWAY_HARNESS_H_
