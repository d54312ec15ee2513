// NodeJoin (node_join.h).
#include "runtime/agent/node_join.h"

#include <utility>

#include "absl/strings/str_cat.h"

#include "common/status.h"
#include "runtime/common/log.h"

namespace sluice::runtime {

NodeJoin::NodeJoin(http::EventLoop& loop, std::unique_ptr<Store> store, const NodeRecord& record,
                   absl::Duration ttl)
    : loop_(loop),
      store_(std::move(store)),
      key_(std::make_unique<LeasedKey>(*store_, NodeKey(record.id), NodeRecordJson(record),
                                       ttl)) {}

absl::StatusOr<std::unique_ptr<NodeJoin>> NodeJoin::Start(const std::string& uri,
                                                          http::EventLoop& loop,
                                                          const NodeRecord& record,
                                                          absl::Duration ttl) {
  if (ttl < absl::Seconds(1))
    return absl::InvalidArgumentError("node_ttl: must be >= 1 s");
  absl::StatusOr<std::unique_ptr<Store>> store = OpenStore(uri, loop);
  if (!store.ok()) {
    return absl::Status(store.status().code(),
                        absl::StrCat("join ", uri, ": ", store.status().message()));
  }
  std::unique_ptr<NodeJoin> j(new NodeJoin(loop, *std::move(store), record, ttl));
  if (absl::Status s = j->key_->Tick(loop.Now()); !s.ok()) {
    return absl::UnavailableError(
        absl::StrCat("join ", uri, ": cannot register node '", record.id, "': ", s.message()));
  }
  LogInfo("agent", "node '", record.id, "' joined ", uri, " (lease ttl ",
          absl::FormatDuration(ttl), ")");
  loop.RunAfter(j->key_->period(), [p = j.get()] { p->Tick(); });
  return j;
}

NodeJoin::~NodeJoin() {
  key_.reset();  // revokes the lease before the store closes
}

void NodeJoin::Tick() {
  const absl::Status s = key_->Tick(loop_.Now());
  const std::string error = s.ok() ? "" : std::string(s.message());
  if (error != last_error_) {
    if (error.empty())
      LogInfo("agent", "node registration renewed again");
    else
      LogWarning("agent", "node registration: ", error, " (retrying)");
    last_error_ = error;
  }
  // Renew more often while failing, so a store back from a restart sees us before the ttl ends.
  loop_.RunAfter(s.ok() ? key_->period() : key_->period() / 3, [this] { Tick(); });
}

}  // namespace sluice::runtime
