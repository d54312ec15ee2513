// FunctionServer: the HTTP side of an inference function's instance process - the "Instance API"
// of docs/platform.md (health, KServe v2 infer, /sluice/v1/batch, /sluice/v1/trial, stats). The
// batch handler runs on one worker thread, one batch at a time in arrival order, so it may block
// on the GPU while the HTTP loop keeps answering health checks. RunFunction() is the whole main()
// of a typical function. Thread safety: every public method may be called from any thread.
#ifndef SLUICE_RUNTIME_SDK_FUNCTION_SERVER_H_
#define SLUICE_RUNTIME_SDK_FUNCTION_SERVER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

#include "nlohmann/json.hpp"
#include "runtime/http/http.h"
#include "runtime/sdk/kserve.h"
#include "runtime/sdk/serial_worker.h"

namespace sluice::runtime {

// Runs one batch: returns exactly one result per request, in order (a wrong count turns every
// request of the batch into an error). Called on the worker thread only, never concurrently.
// An exception escaping it fails the batch (every request gets its what()).
using BatchHandler = std::function<std::vector<InferResult>(std::span<const InferRequest>)>;

struct FunctionOptions {
  std::string name = "function";  // the KServe model name: /v2/models/{name}/infer
  std::string host = "127.0.0.1";
  int port = 0;  // 0: ephemeral (tests); instances get $PORT
  // A valid KServe v2 request body; POST /sluice/v1/trial runs the handler on copies of it.
  // Null: trials answer 409.
  nlohmann::json sample_request;
  // Peak device memory of the function in bytes, reported by trials; unset: 0.
  std::function<int64_t()> memory_bytes;
  // Run the handler on the HTTP loop thread instead of the worker: only for handlers that never
  // block (a no-op like the echo example), to save two thread hand-offs per batch. Batches are
  // then still one at a time, in arrival order; health checks wait for the handler.
  bool handler_on_loop = false;

  // name from $SLUICE_FUNCTION (else `default_name`), port from $PORT (required: InvalidArgument
  // when absent or not in [0, 65535]), host from $SLUICE_HOST (else 127.0.0.1).
  static absl::StatusOr<FunctionOptions> FromEnv(const std::string& default_name);
};

struct FunctionStats {
  int64_t in_flight = 0;  // requests accepted and not yet answered
  int64_t served = 0;     // requests answered by the handler (ok or error)
  int64_t batches = 0;    // handler calls for requests (trials excluded)
};

// Lifecycle: kStarting (live; ready answers 503; requests 503) -> SetReady(true) -> kReady
// (requests run) -> Drain() -> kDraining (ready and new requests 503; accepted batches finish
// and are answered) -> kStopped (listener closed). SetReady(false) returns to kStarting.
class FunctionServer {
 public:
  // Binds and serves. Unavailable when the port cannot be bound.
  static absl::StatusOr<std::unique_ptr<FunctionServer>> Start(FunctionOptions options,
                                                               BatchHandler handler);
  ~FunctionServer();  // Drain()s
  FunctionServer(const FunctionServer&) = delete;
  FunctionServer& operator=(const FunctionServer&) = delete;

  void SetReady(bool ready);
  int port() const;
  FunctionStats stats() const;
  // Blocks until SIGTERM/SIGINT (or RequestShutdown()), then Drain()s.
  void Wait();
  // Stops accepting batches, runs and answers every batch already accepted, then closes the
  // server. Idempotent.
  void Drain();

 private:
  FunctionServer() = default;
  void Route(http::Router& router);
  void OnBatch(http::Request& req, http::Responder respond);
  void OnInfer(http::Request& req, http::Responder respond);
  void OnTrial(http::Request& req, http::Responder respond);
  // Checks readiness, counts the requests in flight and queues `job`; answers 503 itself when
  // not ready or draining (then `job` is dropped and `respond` used).
  void Enqueue(int64_t requests, http::Responder respond,
               absl::AnyInvocable<void(http::Responder)> job);
  std::vector<InferResult> RunHandler(std::span<const InferRequest> batch);
  nlohmann::json StatsJson() const;

  FunctionOptions options_;
  BatchHandler handler_;
  std::atomic<bool> ready_{false};
  std::atomic<bool> draining_{false};
  std::atomic<int64_t> in_flight_{0};
  std::atomic<int64_t> served_{0};
  std::atomic<int64_t> batches_{0};
  std::unique_ptr<http::EventLoop> loop_;
  std::unique_ptr<SerialWorker> worker_;  // members die in reverse order: loop_ outlives all
  std::unique_ptr<http::Server> server_;
  std::atomic<bool> drained_{false};
};

// The main() of an inference function: `prestart` (may be null: the runtime's own set-up that
// needs no function, e.g. a driver context), then, in a pre-started pool process
// ($SLUICE_POOL_SOCKET, instance_start.h), wait for the instance to become; then
// FunctionOptions::FromEnv(default_name) updated by `configure` (may be null), start serving
// (live, not ready), run `load` on the calling thread (load the model; returns the batch
// handler), mark ready, serve until SIGTERM/SIGINT, drain. The stages are timed into the start
// record (GET /sluice/v1/stats "start"). Returns the process exit code: 0 after a clean drain,
// 1 when prestart, the handoff, options, binding or loading fail (the error is on stderr).
int RunFunction(const std::string& default_name,
                const std::function<void(FunctionOptions&)>& configure,
                const std::function<absl::StatusOr<BatchHandler>()>& load,
                const std::function<absl::Status()>& prestart = nullptr);

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_SDK_FUNCTION_SERVER_H_
