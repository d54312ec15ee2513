// LlmServer: the HTTP instance API of sluice-example-llm ("LLM instance API" in docs/platform.md
// and examples/llm/README.md): generate (streaming or not), the prefill/decode roles and the
// prefill->decode switch, prefill with a KV push to a decode instance, KV intake and decode from
// it. Every handler and engine callback runs on the EventLoop's thread, which owns all state.
#ifndef SLUICE_EXAMPLES_LLM_LLM_SERVER_H_
#define SLUICE_EXAMPLES_LLM_LLM_SERVER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "llm_engine.h"
#include "runtime/http/http.h"

namespace sluice::examples {

namespace http = runtime::http;

// Roles: kColocated serves /generate; kPrefill serves /prefill (and pushes KV); kDecode takes
// /kv/{id} and serves /decode. POST /sluice/v1/role switches any role to any other, except
// that an instance holding received KV cannot leave kDecode / kColocated (it would lose it):
// the prefill -> decode switch is BlitzScale's mutation.
enum class LlmRole { kColocated, kPrefill, kDecode };
absl::StatusOr<LlmRole> ParseLlmRole(const std::string& role);
const char* LlmRoleName(LlmRole role);

struct LlmServerOptions {
  std::string model = "llama2-7b";
  std::string gpu = "a100";
  int tp = 0;
  LlmRole role = LlmRole::kColocated;
  double kv_scale = 1.0 / 256;  // emulated KV bytes sent = tokens x kv_bytes_per_token x this
  double time_scale = 1.0;      // emulated iteration time = model time x this
  std::string host = "127.0.0.1";
  int port = 0;
};

class LlmServer {
 public:
  // Builds the model (NotFound / InvalidArgument as core::BuiltinLlmModel) and binds.
  static absl::StatusOr<std::unique_ptr<LlmServer>> Start(http::EventLoop& loop,
                                                          LlmServerOptions options);
  // Stops serving and drops requests in flight. Call from a thread other than the loop's, while
  // the loop still runs (it finishes tear-down there).
  ~LlmServer();
  int port() const;

 private:
  struct KvEntry {
    int prompt_tokens = 0;
    uint64_t seed = 0;
    std::string first_text;
    int64_t bytes = 0;
  };
  LlmServer(http::EventLoop& loop, LlmServerOptions options,
            std::unique_ptr<core::LlmPerfModel> model);
  void Route(http::Router& router);
  void OnGenerate(http::Request& req, http::Responder respond);
  void OnRole(http::Request& req, http::Responder respond);
  void OnStats(http::Request& req, http::Responder respond);
  void OnPrefill(http::Request& req, http::Responder respond);
  void OnKv(http::Request& req, http::Responder respond);
  void OnDecode(http::Request& req, http::Responder respond);
  // POST /sluice/v1/cancel/{request_id}: the client has gone (the gateway says so).
  void OnCancel(http::Request& req, http::Responder respond);
  // Profiling trial: one decode step of `batch` sequences at kTrialContextTokens each.
  void OnTrial(http::Request& req, http::Responder respond);
  static constexpr int kTrialContextTokens = 1024;
  // Runs `job` and answers `respond` with JSON or an SSE stream when it finishes; a from_kv job
  // leaves out token 0 (decode from KV: the prefill instance returned it). False
  // (and `respond` answered 400 naming the field) when the engine refused the job.
  bool RunAndAnswer(GenJob job, bool stream, http::Responder respond);
  void PushKv(const std::string& decode_url, const std::string& id, KvEntry entry,
              http::Responder respond);
  int64_t KvBytes(int tokens) const;

  http::EventLoop& loop_;
  LlmServerOptions options_;
  LlmEngine engine_;
  std::unique_ptr<http::Client> client_;
  std::unique_ptr<http::Server> server_;
  absl::flat_hash_map<std::string, KvEntry> kv_;  // received, by request_id
  int64_t next_id_ = 0;
  // Requests accepted per endpoint (GET /sluice/v1/stats), so a test can tell which instance
  // prefilled and which decoded.
  int64_t generate_requests_ = 0;
  int64_t prefill_requests_ = 0;
  int64_t decode_requests_ = 0;
  int64_t cancelled_requests_ = 0;
};

}  // namespace sluice::examples

#endif  // SLUICE_EXAMPLES_LLM_LLM_SERVER_H_
