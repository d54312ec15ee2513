// The reservation is taken under the lock and the segment carved outside it (moving a GiB of
// chunks into a view takes page-table work), so concurrent Acquire/List never wait behind it.
// Accounting is in whole arena chunks, so a model that fits under the limit always finds them.
#include "runtime/paramstore/param_store.h"

#include <numeric>

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace sluice::runtime {

ParamLease::~ParamLease() { store_->Unpin(model_); }

ParamWriter::~ParamWriter() { Abort(); }

absl::Status ParamWriter::Commit() {
  if (done_) return absl::FailedPreconditionError("writer of '" + model_ + "' already finished");
  SLUICE_RETURN_IF_ERROR(segment_->Seal());
  done_ = true;
  return store_->Publish(model_);
}

void ParamWriter::Abort() {
  if (done_) return;
  done_ = true;
  store_->Drop(model_);
}

absl::StatusOr<std::unique_ptr<ParamStore>> ParamStore::Create(ParamStoreOptions options) {
  if (options.capacity_bytes <= 0) {
    return absl::InvalidArgumentError("field 'capacity_bytes': must be > 0");
  }
  if (!(options.evict_threshold > 0 && options.evict_threshold <= 1)) {
    return absl::InvalidArgumentError("field 'evict_threshold': must be in (0, 1]");
  }
  if (!options.now) return absl::InvalidArgumentError("field 'now': clock required");
  ParamArenaOptions ao;
  ao.capacity_bytes = options.capacity_bytes;
  ao.chunk_bytes = options.chunk_bytes;
  ao.pretouch = options.pretouch;
  ao.huge_pages = options.huge_pages;
  SLUICE_ASSIGN_OR_RETURN(std::shared_ptr<ParamArena> arena, ParamArena::Create(ao));
  return std::unique_ptr<ParamStore>(new ParamStore(std::move(options), std::move(arena)));
}

absl::Status ParamStore::ValidateModelName(const std::string& model) {
  if (model.empty() || model.size() > 128) {
    return absl::InvalidArgumentError("model name must be 1-128 characters");
  }
  for (char c : model) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-' || c == ':';
    if (!ok) {
      return absl::InvalidArgumentError(
          absl::StrCat("model name '", model, "': only letters, digits and . _ - : allowed"));
    }
  }
  return absl::OkStatus();
}

int64_t ParamStore::limit_bytes() const {
  return static_cast<int64_t>(static_cast<double>(options_.capacity_bytes) *
                              options_.evict_threshold);
}

absl::Status ParamStore::MakeRoomLocked(const std::string& model, int64_t bytes) {
  const int64_t limit = limit_bytes();
  int64_t evictable = 0;
  for (const auto& [name, e] : entries_) {
    if (e.ready && e.pins == 0) evictable += e.reserved;
  }
  if (used_ - evictable + bytes > limit) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "model '", model, "' needs ", bytes, " bytes; the store's limit is ", limit, " bytes (",
        options_.evict_threshold * 100, "% of ", options_.capacity_bytes, ") and ",
        used_ - evictable, " bytes are pinned or filling; nothing was evicted"));
  }
  while (used_ + bytes > limit) {
    auto lru = entries_.end();
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->second.ready && it->second.pins == 0 &&
          (lru == entries_.end() || it->second.use_seq < lru->second.use_seq)) {
        lru = it;
      }
    }
    SLUICE_CHECK(lru != entries_.end());  // guaranteed by the evictable sum above
    used_ -= lru->second.reserved;
    entries_.erase(lru);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<ParamWriter>> ParamStore::BeginPut(
    const std::string& model, int64_t bytes, std::vector<int64_t> layer_bytes) {
  SLUICE_RETURN_IF_ERROR(ValidateModelName(model));
  if (bytes <= 0) return absl::InvalidArgumentError("field 'bytes': must be > 0");
  if (!layer_bytes.empty()) {
    for (int64_t l : layer_bytes) {
      if (l <= 0) return absl::InvalidArgumentError("field 'layer_bytes': each must be > 0");
    }
    if (std::accumulate(layer_bytes.begin(), layer_bytes.end(), int64_t{0}) != bytes) {
      return absl::InvalidArgumentError("field 'layer_bytes': must sum to 'bytes'");
    }
  }
  const int64_t reserved = arena_->RoundUp(bytes);
  {
    absl::MutexLock lock(&mu_);
    if (auto it = entries_.find(model); it != entries_.end()) {
      return absl::AlreadyExistsError(absl::StrCat(
          "model '", model, "' is already ", it->second.ready ? "stored" : "being filled"));
    }
    SLUICE_RETURN_IF_ERROR(MakeRoomLocked(model, reserved));
    Entry e;
    e.bytes = bytes;
    e.reserved = reserved;
    e.layer_bytes = std::move(layer_bytes);
    entries_.emplace(model, std::move(e));  // segment null: reserved, allocating
    used_ += reserved;
  }
  // The index drops a segment before its last user may let go of it (a chain member still
  // forwarding a model evicted meanwhile), so its chunks can be briefly missing: wait for them.
  absl::StatusOr<std::unique_ptr<ParamSegment>> seg = ParamSegment::Create(arena_, bytes);
  for (int i = 0; i < 500 && absl::IsResourceExhausted(seg.status()); ++i) {
    absl::SleepFor(absl::Milliseconds(10));
    seg = ParamSegment::Create(arena_, bytes);
  }
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(model);
  SLUICE_CHECK(it != entries_.end());  // only this writer's Drop removes a filling entry
  if (!seg.ok()) {
    used_ -= reserved;
    entries_.erase(it);
    return seg.status();
  }
  it->second.segment = std::shared_ptr<ParamSegment>(std::move(*seg));
  return std::unique_ptr<ParamWriter>(new ParamWriter(this, model, it->second.segment));
}

absl::Status ParamStore::Publish(const std::string& model) {
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(model);
  SLUICE_CHECK(it != entries_.end() && !it->second.ready);
  it->second.ready = true;
  it->second.loaded_at = it->second.last_use = options_.now();
  it->second.use_seq = ++seq_;
  return absl::OkStatus();
}

void ParamStore::Drop(const std::string& model) {
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(model);
  if (it == entries_.end() || it->second.ready) return;
  used_ -= it->second.reserved;
  entries_.erase(it);
}

void ParamStore::Unpin(const std::string& model) {
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(model);
  if (it != entries_.end() && it->second.pins > 0) --it->second.pins;
}

absl::StatusOr<std::unique_ptr<ParamLease>> ParamStore::Acquire(const std::string& model) {
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(model);
  if (it == entries_.end()) return absl::NotFoundError("no model '" + model + "' in the store");
  Entry& e = it->second;
  if (!e.ready) return absl::UnavailableError("model '" + model + "' is still loading");
  ++e.pins;
  e.last_use = options_.now();
  e.use_seq = ++seq_;
  return std::unique_ptr<ParamLease>(new ParamLease(this, model, e.segment, e.layer_bytes));
}

absl::Status ParamStore::Evict(const std::string& model) {
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(model);
  if (it == entries_.end()) return absl::NotFoundError("no model '" + model + "' in the store");
  if (!it->second.ready) {
    return absl::FailedPreconditionError("model '" + model + "' is still loading");
  }
  if (it->second.pins > 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("model '", model, "' is pinned by ", it->second.pins, " user(s)"));
  }
  used_ -= it->second.reserved;
  entries_.erase(it);
  return absl::OkStatus();
}

std::vector<ParamModelInfo> ParamStore::List() const {
  absl::MutexLock lock(&mu_);
  std::vector<ParamModelInfo> out;
  for (const auto& [name, e] : entries_) {
    out.push_back({name, e.bytes, e.pins, e.ready, e.loaded_at, e.last_use, e.layer_bytes});
  }
  return out;
}

bool ParamStore::Has(const std::string& model) const {
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(model);
  return it != entries_.end() && it->second.ready;
}

int64_t ParamStore::used_bytes() const {
  absl::MutexLock lock(&mu_);
  return used_;
}

}  // namespace sluice::runtime
