// A fake LLM function instance speaking the instance API of examples/llm (docs/platform.md,
// "LLM instance API"): `POST /sluice/v1/generate` {request_id, prompt, max_tokens, stop, stream}
// answers token events "data: {"index", "text"}" and a final "data: {"done": true,
// "finish_reason", "prompt_tokens", "completion_tokens"}" (or one JSON when stream is false);
// a prompt over `kv_capacity_tokens` bytes (one token per byte) gets 400 {"error"}. Tokens are
// "t0 ", "t1 ", ... produced `token_delay` apart on a worker thread. Also serves the P/D pair
// /sluice/v1/prefill and /sluice/v1/decode, and POST /sluice/v1/cancel/{request_id} (recorded; a
// stream of that request stops, cut without its done event). For the gateway's tests and
// the openai npm test driver; not a model. Thread safety: accessors lock.
#ifndef SLUICE_RUNTIME_GATEWAY_TESTING_FAKE_LLM_INSTANCE_H_
#define SLUICE_RUNTIME_GATEWAY_TESTING_FAKE_LLM_INSTANCE_H_

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "runtime/http/http.h"

namespace sluice::runtime::testing {

struct FakeLlmOptions {
  int64_t kv_capacity_tokens = 2048;
  absl::Duration token_delay = absl::Milliseconds(1);
  int fail_after_tokens = -1;  // >= 0: drop the stream (no done event) after that many tokens
  bool fail_500 = false;       // answer 500 before any token
};

class FakeLlmInstance {
 public:
  explicit FakeLlmInstance(int64_t id, FakeLlmOptions options = {});
  ~FakeLlmInstance();
  std::string url() const;
  int64_t id() const { return id_; }
  void set_options(const FakeLlmOptions& o);
  int requests_received() const;
  std::vector<std::string> prompts() const;
  // P/D: the decode_url of every prefill request (where the KV was "pushed").
  std::vector<std::string> kv_pushes() const;
  // Request ids of every POST /sluice/v1/cancel, in arrival order; token events written so far.
  std::vector<std::string> cancels() const;
  int tokens_written() const;

 private:
  void OnGenerate(http::Request& req, http::Responder respond);
  // P/D: prefill answers {"text": "t0 ", "prompt_tokens"}; decode streams "t1 ", "t2 ", ...
  void OnPrefill(http::Request& req, http::Responder respond);
  void OnDecode(http::Request& req, http::Responder respond);
  void StreamTokens(http::Responder respond, std::vector<std::string> tokens,
                    std::string done_event, const FakeLlmOptions& o, std::string request_id);
  bool Cancelled(const std::string& request_id) const;

  const int64_t id_;
  mutable absl::Mutex mu_;
  FakeLlmOptions options_;
  int requests_ = 0;
  std::vector<std::string> prompts_;
  std::vector<std::string> kv_pushes_;
  std::vector<std::string> cancels_;
  int tokens_written_ = 0;
  std::vector<std::thread> workers_;
  std::unique_ptr<http::EventLoop> loop_;
  std::unique_ptr<http::Server> server_;
  int port_ = 0;
};

}  // namespace sluice::runtime::testing

#endif  // SLUICE_RUNTIME_GATEWAY_TESTING_FAKE_LLM_INSTANCE_H_
