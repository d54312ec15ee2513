// A transfer outlives any one upstream connection: it is keyed by the origin's transfer id, so a
// rerouted upstream re-attaches to it and resumes from the stored prefix. Generations make a
// superseded connection's late chunks harmless.
#include "runtime/paramstore/chain_receiver.h"

#include <sys/socket.h>
#include <unistd.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "runtime/paramstore/chain_protocol.h"
#include "runtime/paramstore/chain_socket.h"
#include "runtime/paramstore/checksum.h"

namespace sluice::runtime {

class ChainReceiver::Transfer : public ChunkSource {
 public:
  Transfer(ChainHello hello, std::unique_ptr<ParamWriter> writer)
      : hello_(std::move(hello)), writer_(std::move(writer)),
        checksums_(static_cast<size_t>(hello_.chunks())) {}
  ~Transfer() override {
    Abort();
    if (forwarder_.joinable()) forwarder_.join();
  }
  const ChainHello& hello() const { return hello_; }

  // Only for stored chunks: the writer (and its segment) live as long as this transfer.
  FileSpan FileAt(int64_t offset) const override ABSL_NO_THREAD_SAFETY_ANALYSIS {
    return writer_->FileAt(offset);
  }
  int64_t WaitAvailable(int64_t have, absl::Duration wait) override {
    absl::MutexLock l(&mu_);
    auto ready = [this, have]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
      return aborted_ || stored_ > have;
    };
    mu_.AwaitWithTimeout(absl::Condition(&ready), wait);
    return aborted_ ? -1 : stored_;
  }
  uint64_t ChunkChecksum(int64_t i) override {
    absl::MutexLock l(&mu_);
    return checksums_[static_cast<size_t>(i)];
  }
  void SetDownstream(int fd) override {
    absl::MutexLock l(&mu_);
    down_fd_ = fd;
  }

  // A new upstream: the previous one (if any) is cut off.
  uint64_t Attach(int fd) {
    absl::MutexLock l(&mu_);
    if (up_fd_ >= 0) shutdown(up_fd_, SHUT_RDWR);
    up_fd_ = fd;
    return ++generation_;
  }
  // The connection of `generation` is about to close: forget its fd (the number may be reused).
  void Detach(uint64_t generation) {
    absl::MutexLock l(&mu_);
    if (generation == generation_) up_fd_ = -1;
  }
  int64_t stored() {
    absl::MutexLock l(&mu_);
    return stored_;
  }
  // Where chunk writes go; nullptr once committed or aborted.
  // Where chunk `index` goes, populated; nullptr once committed or aborted.
  char* PrepareChunk(int64_t index) {
    absl::MutexLock l(&mu_);
    if (aborted_ || committed_) return nullptr;
    writer_->Prepare(index * hello_.chunk_bytes, hello_.chunk_length(index));
    return writer_->data() + index * hello_.chunk_bytes;
  }
  bool Store(uint64_t generation, int64_t index, uint64_t checksum) {
    absl::MutexLock l(&mu_);
    if (generation != generation_ || aborted_ || index != stored_) return false;
    checksums_[static_cast<size_t>(index)] = checksum;
    ++stored_;
    return true;
  }
  // True when another upstream attached within `timeout`.
  bool WaitReattach(uint64_t generation, absl::Duration timeout) {
    absl::MutexLock l(&mu_);
    auto moved = [this, generation]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
      return aborted_ || generation_ != generation;
    };
    mu_.AwaitWithTimeout(absl::Condition(&moved), timeout);
    return !aborted_ && generation_ != generation;
  }
  absl::Status Commit() {
    absl::MutexLock l(&mu_);
    if (committed_) return absl::OkStatus();
    if (aborted_) return absl::AbortedError("transfer aborted");
    writer_->KeepChunkChecksums(hello_.chunk_bytes, checksums_);  // for sending it on later
    SLUICE_RETURN_IF_ERROR(writer_->Commit());
    committed_ = true;
    return absl::OkStatus();
  }
  void Abort() {
    absl::MutexLock l(&mu_);
    aborted_ = true;
    if (up_fd_ >= 0) shutdown(up_fd_, SHUT_RDWR);
    if (down_fd_ >= 0) shutdown(down_fd_, SHUT_RDWR);
    up_fd_ = -1;
    if (!committed_) writer_->Abort();
  }
  void StartForwarder(const ChainOptions& o) {
    if (hello_.rest.empty()) {
      absl::MutexLock l(&mu_);
      forwarded_ = true;
      return;
    }
    forwarder_ = std::thread([this, o] {
      ChainDone d = ForwardToChain(*this, hello_, hello_.rest, o);
      absl::MutexLock l(&mu_);
      forward_report_ = std::move(d);
      forwarded_ = true;
    });
  }
  // True (with the report) once the forwarder finished; false after `wait` or an abort.
  bool WaitForwarded(absl::Duration wait, ChainDone& report) {
    absl::MutexLock l(&mu_);
    auto done = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return aborted_ || forwarded_; };
    mu_.AwaitWithTimeout(absl::Condition(&done), wait);
    if (forwarded_) report = forward_report_;
    return forwarded_;
  }
  bool aborted() {
    absl::MutexLock l(&mu_);
    return aborted_;
  }

 private:
  const ChainHello hello_;
  std::thread forwarder_;
  absl::Mutex mu_;
  std::unique_ptr<ParamWriter> writer_ ABSL_GUARDED_BY(mu_);
  std::vector<uint64_t> checksums_ ABSL_GUARDED_BY(mu_);
  int64_t stored_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
  int up_fd_ ABSL_GUARDED_BY(mu_) = -1;
  int down_fd_ ABSL_GUARDED_BY(mu_) = -1;
  bool aborted_ ABSL_GUARDED_BY(mu_) = false;
  bool committed_ ABSL_GUARDED_BY(mu_) = false;
  bool forwarded_ ABSL_GUARDED_BY(mu_) = false;
  ChainDone forward_report_ ABSL_GUARDED_BY(mu_);
};

namespace {

// Receives chunks from the stored prefix on until every chunk is stored and verified.
// InvalidArgument/DataLoss: the upstream broke the protocol or the data (drop the transfer);
// other errors: the upstream is gone (wait for a reroute).
absl::Status ReceiveChunks(int fd, ChainReceiver::Transfer& t, uint64_t generation) {
  const ChainHello& h = t.hello();
  const int64_t n = h.chunks();
  for (int64_t i = t.stored(); i < n; i = t.stored()) {
    SLUICE_ASSIGN_OR_RETURN(ChainFrame f, ReadFrameHeader(fd));
    if (f.index == -1 && f.length == 0) continue;  // heartbeat
    if (f.index != i || f.length != h.chunk_length(i)) {
      return absl::InvalidArgumentError(absl::StrCat("expected chunk ", i, " of ",
                                                     h.chunk_length(i), " bytes, got chunk ",
                                                     f.index, " of ", f.length));
    }
    char* dst = t.PrepareChunk(i);
    if (dst == nullptr) return absl::AbortedError("transfer aborted");
    SLUICE_RETURN_IF_ERROR(RecvAll(fd, dst, static_cast<size_t>(f.length)));
    if (FrameChecksum(dst, static_cast<size_t>(f.length)) != f.checksum) {
      return absl::DataLossError(absl::StrCat("chunk ", i, " of '", h.model, "': bad checksum"));
    }
    if (!t.Store(generation, i, f.checksum)) return absl::AbortedError("superseded upstream");
    SLUICE_RETURN_IF_ERROR(WriteAck(fd, i + 1));
  }
  return absl::OkStatus();
}

// Constant time in the token's length, so a wrong guess learns nothing from the timing.
bool TokenMatches(const std::string& got, const std::string& want) {
  if (want.empty()) return true;
  unsigned diff = got.size() == want.size() ? 0u : 1u;
  for (size_t i = 0; i < want.size(); ++i) {
    diff |= static_cast<unsigned char>(want[i]) ^
            static_cast<unsigned char>(i < got.size() ? got[i] : 0);
  }
  return diff == 0;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ChainReceiver>> ChainReceiver::Start(ParamStore& store,
                                                                    ChainReceiverOptions options) {
  int port = 0;
  SLUICE_ASSIGN_OR_RETURN(int fd, Listen(options.host, options.port, port));
  std::unique_ptr<ChainReceiver> r(new ChainReceiver(store, std::move(options), fd, port));
  r->accept_thread_ = std::thread([p = r.get()] { p->AcceptLoop(); });
  return r;
}

ChainReceiver::~ChainReceiver() { Stop(); }

std::string ChainReceiver::address() const { return absl::StrCat(options_.host, ":", port_); }

void ChainReceiver::AcceptLoop() {
  for (;;) {
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return;  // shut down by Stop()
    }
    SetIoTimeout(fd, options_.chain.io_timeout);
    absl::MutexLock l(&mu_);
    if (stopped_) {
      close(fd);
      return;
    }
    fds_.insert(fd);
    threads_.Start([this, fd] { Serve(fd); });
  }
}

void ChainReceiver::Untrack(int fd) {
  {
    absl::MutexLock l(&mu_);
    fds_.erase(fd);
  }
  close(fd);
}

void ChainReceiver::Forget(uint64_t transfer_id) {
  std::shared_ptr<Transfer> t;  // destroyed outside the lock (joins its forwarder)
  absl::MutexLock l(&mu_);
  auto it = transfers_.find(transfer_id);
  if (it != transfers_.end()) {
    t = std::move(it->second);
    transfers_.erase(it);
  }
}

std::shared_ptr<ChainReceiver::Transfer> ChainReceiver::Attach(const ChainHello& h, int fd,
                                                               uint64_t& generation,
                                                               ChainWelcome& welcome) {
  welcome.code = WelcomeCode::kRejected;
  absl::MutexLock attach(&attach_mu_);
  {
    absl::MutexLock l(&mu_);
    if (stopped_) {
      welcome.message = "receiver shutting down";
      return nullptr;
    }
    if (auto it = transfers_.find(h.transfer_id); it != transfers_.end()) {
      const ChainHello& o = it->second->hello();
      if (o.model != h.model || o.total_bytes != h.total_bytes ||
          o.chunk_bytes != h.chunk_bytes) {
        welcome.message = "transfer id reused for different parameters";
        return nullptr;
      }
      generation = it->second->Attach(fd);
      return it->second;
    }
  }
  return NewTransfer(h, fd, generation, welcome);
}

std::shared_ptr<ChainReceiver::Transfer> ChainReceiver::NewTransfer(const ChainHello& h, int fd,
                                                                    uint64_t& generation,
                                                                    ChainWelcome& welcome) {
  if (store_.Has(h.model)) {
    welcome.code = WelcomeCode::kExists;
    return nullptr;
  }
  // Without mu_: the carve may wait for chunks of a transfer that is finishing (param_store.cc).
  absl::StatusOr<std::unique_ptr<ParamWriter>> w = store_.BeginPut(h.model, h.total_bytes);
  if (!w.ok()) {
    welcome.message = std::string(w.status().message());
    return nullptr;
  }
  auto t = std::make_shared<Transfer>(h, std::move(*w));
  {
    absl::MutexLock l(&mu_);
    if (stopped_) {  // `t` goes: its writer drops the reservation
      welcome.message = "receiver shutting down";
      return nullptr;
    }
    transfers_[h.transfer_id] = t;
    generation = t->Attach(fd);
    t->StartForwarder(options_.chain);
  }
  return t;
}

void ChainReceiver::Serve(int fd) {
  absl::StatusOr<ChainHello> h = ReadHello(fd);
  if (!h.ok() || !TokenMatches(h->token, options_.chain.token)) {
    ++refused_;
    (void)WriteWelcome(fd, {WelcomeCode::kRejected, 0,
                            h.ok() ? "chain token refused" : std::string(h.status().message())});
    return Untrack(fd);
  }
  uint64_t gen = 0;
  ChainWelcome w;
  std::shared_ptr<Transfer> t = Attach(*h, fd, gen, w);
  if (t == nullptr) {
    (void)WriteWelcome(fd, w);
    return Untrack(fd);
  }
  absl::Status s = WriteWelcome(fd, {WelcomeCode::kOk, t->stored(), ""});
  if (s.ok()) s = ReceiveChunks(fd, *t, gen);
  if (s.ok()) s = t->Commit();
  if (!s.ok()) {
    const bool broken = absl::IsInvalidArgument(s) || absl::IsDataLoss(s) ||
                        absl::IsResourceExhausted(s) || absl::IsInternal(s);
    if (!absl::IsAborted(s) && (broken || !t->WaitReattach(gen, options_.orphan_timeout))) {
      t->Abort();  // never served: the writer drops the partial segment
      Forget(h->transfer_id);
      ++dropped_;
    }
    t->Detach(gen);
    return Untrack(fd);
  }
  // Committed: servable here. Report once the chain behind this member has finished (its
  // sends are bounded by timeouts); heartbeats keep the upstream from declaring us dead.
  ChainDone report;
  bool upstream_ok = true;
  while (!t->WaitForwarded(options_.chain.io_timeout / 3, report) && !t->aborted()) {
    if (upstream_ok) upstream_ok = WriteHeartbeat(fd).ok();
  }
  report.completed.insert(report.completed.begin(), h->to);
  if (upstream_ok) (void)WriteDone(fd, report);
  ++completed_;
  t->Detach(gen);
  Forget(h->transfer_id);
  Untrack(fd);
}

void ChainReceiver::Stop() {
  absl::flat_hash_map<uint64_t, std::shared_ptr<Transfer>> transfers;
  {
    absl::MutexLock l(&mu_);
    if (stopped_) return;
    stopped_ = true;
    shutdown(listen_fd_, SHUT_RDWR);
    for (int fd : fds_) shutdown(fd, SHUT_RDWR);
    for (auto& [id, t] : transfers_) t->Abort();
    transfers = std::move(transfers_);
    transfers_.clear();
  }
  if (accept_thread_.joinable()) accept_thread_.join();
  threads_.JoinAll();
  transfers.clear();
  close(listen_fd_);
}

}  // namespace sluice::runtime
