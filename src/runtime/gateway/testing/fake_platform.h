// Fakes of the gateway's peers for its tests: a controller serving a route table the test edits
// (and recording wakes and load reports), and instances answering /sluice/v1/batch that can hold,
// fail, or fail single requests. Real HTTP servers on 127.0.0.1:0, each on its own EventLoop.
// Thread safety: every accessor locks; handlers run on the fakes' loops.
#ifndef SLUICE_RUNTIME_GATEWAY_TESTING_FAKE_PLATFORM_H_
#define SLUICE_RUNTIME_GATEWAY_TESTING_FAKE_PLATFORM_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

#include "nlohmann/json.hpp"
#include "runtime/http/http.h"

namespace sluice::runtime::testing {

class FakeController {
 public:
  FakeController();
  ~FakeController();
  std::string url() const;  // "127.0.0.1:port"
  // Replaces the route table (version is bumped).
  void SetFunctions(nlohmann::json functions);
  std::vector<std::string> wakes() const;
  int load_reports() const;
  nlohmann::json last_load() const;

 private:
  mutable absl::Mutex mu_;
  nlohmann::json functions_ = nlohmann::json::array();
  int64_t version_ = 0;
  std::vector<std::string> wakes_;
  int load_reports_ = 0;
  nlohmann::json last_load_;
  std::unique_ptr<http::EventLoop> loop_;
  std::unique_ptr<http::Server> server_;
};

// Answers each request of a batch with {"model_name", "outputs": [{"name": "instance", "data":
// [id]}]} echoing the request's id; an input named "bad" gets {"error": "bad input"}.
class FakeInstance {
 public:
  enum class Mode { kServe, kHold, kFail500 };
  explicit FakeInstance(int64_t id);
  ~FakeInstance();
  std::string url() const;
  int64_t id() const { return id_; }
  void set_mode(Mode m);
  // Answers every held batch normally.
  void Release();
  // Closes the listener and every connection (held batches are dropped: a crash).
  void Crash();
  std::vector<int> batch_sizes() const;
  int requests_received() const;

 private:
  void OnBatch(http::Request& req, http::Responder respond);
  static http::Response Answer(const std::string& body, int64_t id);

  const int64_t id_;
  mutable absl::Mutex mu_;
  Mode mode_ = Mode::kServe;
  std::vector<int> batch_sizes_;
  std::vector<std::pair<std::string, http::Responder>> held_;
  std::unique_ptr<http::EventLoop> loop_;
  std::unique_ptr<http::Server> server_;
  int port_ = 0;
};

// {"id", "url", "capacity_rps", "state"} of a route instance.
nlohmann::json RouteInstanceJson(const FakeInstance& inst, double capacity, const char* state);
// A route with the given batching and instances; queue_max 256, timeout 30 s unless set.
nlohmann::json RouteJson(const std::string& name, int max_batch, int delay_ms,
                         nlohmann::json instances, int queue_max = 256);

// A valid KServe v2 body with input `input_name` and request id `id`.
std::string InferBody(const std::string& id, const std::string& input_name = "x");

}  // namespace sluice::runtime::testing

#endif  // SLUICE_RUNTIME_GATEWAY_TESTING_FAKE_PLATFORM_H_
