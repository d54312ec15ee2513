// EtcdStore's watches: one /v3/watch stream per watch on the store's I/O thread, each on its own
// http::Client so that dropping the watch closes its connection. Stream messages are
// newline-delimited JSON; their events are queued under a mutex for Poll (the owner's thread).
// A stream that ends or breaks is re-opened from the last queued revision after
// `watch_retry`, so etcd restarts are invisible to Poll; compaction is not (OutOfRange).
#include <algorithm>
#include <future>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "nlohmann/json.hpp"

#include "runtime/http/http.h"
#include "runtime/store/etcd_json.h"
#include "runtime/store/etcd_store.h"

namespace sluice::runtime {

// Lifetime: state shared with the stream callbacks and retry timers (which run on the store's
// loop and may outlive the Watch); `closed` is set, and the loop passes a barrier, before the
// client is destroyed, and every timer checks `closed` on the loop thread before using `this`.
class EtcdStore::Watch final : public StoreWatch {
 public:
  struct State {
    absl::Mutex mu;
    std::vector<WatchEvent> queue ABSL_GUARDED_BY(mu);
    absl::Status broken ABSL_GUARDED_BY(mu);
    bool closed ABSL_GUARDED_BY(mu) = false;
    int64_t last_revision ABSL_GUARDED_BY(mu) = 0;  // of the last queued event
    // Loop thread only:
    std::string pending;  // bytes of a message not yet ended by '\n'
  };

  Watch(EtcdStore& store, std::string prefix, int64_t after_revision)
      : store_(store), prefix_(std::move(prefix)), state_(std::make_shared<State>()),
        client_(std::make_unique<http::Client>(*store.loop_)) {
    absl::MutexLock lock(&state_->mu);
    state_->last_revision = after_revision;
  }
  ~Watch() override {
    {
      absl::MutexLock lock(&state_->mu);
      state_->closed = true;
    }
    // A retry timer that saw `closed` false may be inside Open() on the loop thread: wait for
    // the loop to pass a barrier so it has left before the client goes.
    std::promise<void> barrier;
    store_.loop_->Post([&barrier] { barrier.set_value(); });
    barrier.get_future().wait();
    client_.reset();  // closes the stream; no callback of it runs after this
  }

  absl::StatusOr<std::vector<WatchEvent>> Poll() override {
    absl::MutexLock lock(&state_->mu);
    if (!state_->broken.ok())
      return state_->broken;
    return std::exchange(state_->queue, {});
  }

  // Opens the stream (from the loop thread or at construction).
  void Open() {
    int64_t from = 0;
    {
      absl::MutexLock lock(&state_->mu);
      if (state_->closed || !state_->broken.ok())
        return;
      from = state_->last_revision + 1;
      state_->pending.clear();
    }
    nlohmann::json create = {{"key", internal::B64(prefix_.empty() ? std::string(1, '\0')
                                                                   : prefix_)},
                             {"range_end", internal::B64(internal::PrefixEnd(prefix_))},
                             {"start_revision", std::to_string(from)}};
    http::Request req;
    req.method = "POST";
    req.target = "/v3/watch";
    req.headers = {{"content-type", "application/json"}};
    req.body = nlohmann::json{{"create_request", create}}.dump();
    http::StreamHandlers handlers;
    handlers.on_data = [this, state = state_](std::string_view data) { OnData(*state, data); };
    handlers.done = [this, state = state_](absl::Status) { Retry(state); };
    client_->Stream(*store_.target_, std::move(req), store_.options_.watch_stream_lifetime,
                    std::move(handlers));
  }

 private:
  // Loop thread. Splits complete messages off the byte stream and queues their events.
  void OnData(State& state, std::string_view data) {
    state.pending.append(data);
    size_t start = 0;
    for (size_t nl; (nl = state.pending.find('\n', start)) != std::string::npos; start = nl + 1) {
      const std::string line = state.pending.substr(start, nl - start);
      if (line.find_first_not_of(" \r\t") == std::string::npos)
        continue;
      absl::StatusOr<internal::WatchMessage> msg =
          internal::ParseWatchMessage(store_.endpoint_, line);
      absl::MutexLock lock(&state.mu);
      if (!msg.ok()) {
        // etcd unavailable (restarting, no leader): the stream ends and is re-opened.
        if (!absl::IsUnavailable(msg.status()))
          state.broken = msg.status();
        continue;
      }
      // One message holds every event of a revision (a lease revocation deletes several keys
      // at one revision), so events at or below the revision before it came from an earlier
      // stream and were delivered already.
      const int64_t delivered = state.last_revision;
      for (WatchEvent& e : msg->events) {
        if (e.revision <= delivered)
          continue;
        state.last_revision = std::max(state.last_revision, e.revision);
        if (e.key.compare(0, prefix_.size(), prefix_) == 0)
          state.queue.push_back(std::move(e));
      }
    }
    state.pending.erase(0, start);
  }

  // Loop thread, when a stream ended: re-open it after a pause unless closed or broken.
  void Retry(const std::shared_ptr<State>& state) {
    {
      absl::MutexLock lock(&state->mu);
      if (state->closed || !state->broken.ok())
        return;
    }
    store_.loop_->RunAfter(store_.options_.watch_retry, [this, state] {
      {
        absl::MutexLock lock(&state->mu);
        if (state->closed)
          return;  // `this` may be gone; see the class comment
      }
      Open();
    });
  }

  EtcdStore& store_;
  const std::string prefix_;
  std::shared_ptr<State> state_;  // co-owned by the stream callbacks and retry timers
  std::unique_ptr<http::Client> client_;
};

absl::StatusOr<std::unique_ptr<StoreWatch>> EtcdStore::WatchPrefix(const std::string& prefix,
                                                                   int64_t after_revision) {
  if (after_revision < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("etcd store: watch after_revision must be >= 0, got ", after_revision));
  }
  auto watch = std::make_unique<Watch>(*this, prefix, after_revision);
  watch->Open();
  return watch;
}

}  // namespace sluice::runtime
