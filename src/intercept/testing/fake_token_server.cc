// Test-side token server: one accept thread, hand-driven periods.
#include "intercept/testing/fake_token_server.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstring>

#include <linux/futex.h>

namespace sluice::intercept::testing {
namespace {

template <typename T>
std::atomic_ref<T> Ref(T& v) {
  return std::atomic_ref<T>(v);
}

bool ReadAll(int fd, void* buf, size_t n) {
  char* p = static_cast<char*>(buf);
  while (n > 0) {
    const ssize_t r = read(fd, p, n);
    if (r <= 0)
      return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

}  // namespace

int64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

std::unique_ptr<FakeTokenServer> FakeTokenServer::Start(FakeServerOptions options) {
  static std::atomic<int> counter{0};
  const int n = counter.fetch_add(1);
  if (options.gpu_uuid.empty()) {
    options.gpu_uuid = "GPU-fake-" + std::to_string(getpid()) + "-" + std::to_string(n);
  }
  std::unique_ptr<FakeTokenServer> s(new FakeTokenServer());
  s->options_ = options;
  s->shm_name_ = std::string(SLUICE_SHM_PREFIX) + options.gpu_uuid;
  s->socket_path_ =
      options.socket_path.empty()
          ? "/tmp/sluice-fake-ts-" + std::to_string(getpid()) + "-" + std::to_string(n)
          : options.socket_path;
  s->reject_reason_.store(options.reject_reason);
  s->shm_bytes_ = SluiceShmBytes(options.slot_count);
  if (!s->CreateSegment() || !s->Listen())
    return nullptr;
  s->thread_ = std::thread([raw = s.get()] { raw->Serve(); });
  return s;
}

bool FakeTokenServer::CreateSegment() {
  shm_unlink(shm_name_.c_str());
  const int fd = shm_open(shm_name_.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0 || ftruncate(fd, static_cast<off_t>(shm_bytes_)) != 0) {
    std::perror("fake token server: shm");
    return false;
  }
  void* p = mmap(nullptr, shm_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED)
    return false;
  auto* h = static_cast<SluiceShmHeader*>(p);
  h->version_major = SLUICE_PROTO_MAJOR;
  h->version_minor = SLUICE_PROTO_MINOR;
  h->header_bytes = sizeof(SluiceShmHeader);
  h->slot_bytes = sizeof(SluiceSlot);
  h->slot_count = options_.slot_count;
  h->server_pid = static_cast<uint32_t>(getpid());
  h->fail_policy = options_.fail_policy;
  h->period_ns = options_.period_ns;
  h->max_tokens = options_.max_tokens;
  h->fail_timeout_ns = options_.fail_timeout_ns;
  h->heartbeat_ns = NowNs();
  std::snprintf(h->gpu_uuid, sizeof(h->gpu_uuid), "%s", options_.gpu_uuid.c_str());
  Ref(h->magic).store(SLUICE_SHM_MAGIC, std::memory_order_release);
  header_ = h;
  return true;
}

bool FakeTokenServer::Listen() {
  listen_fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", socket_path_.c_str());
  unlink(socket_path_.c_str());
  if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(listen_fd_, 16) != 0) {
    std::perror("fake token server: bind/listen");
    return false;
  }
  return true;
}

FakeTokenServer::~FakeTokenServer() {
  stop_.store(true);
  if (thread_.joinable())
    thread_.join();
  for (int fd : clients_)
    close(fd);
  if (listen_fd_ >= 0)
    close(listen_fd_);
  unlink(socket_path_.c_str());
  shm_unlink(shm_name_.c_str());
  if (header_ != nullptr)
    munmap(header_, shm_bytes_);
}

void FakeTokenServer::Serve() {
  while (!stop_.load()) {
    pollfd pfd{listen_fd_, POLLIN, 0};
    if (poll(&pfd, 1, 20) <= 0)
      continue;
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0)
      continue;
    Answer(fd);
    clients_.push_back(fd);
  }
}

void FakeTokenServer::SendReject(int fd, uint32_t reason) {
  SluiceReject r{};
  r.hdr = {SLUICE_MSG_MAGIC, SLUICE_MSG_REJECT, sizeof(SluiceReject)};
  r.version_major = SLUICE_PROTO_MAJOR;
  r.reason = reason;
  std::snprintf(r.detail, sizeof(r.detail), "fake server says no (%u)", reason);
  (void)!write(fd, &r, sizeof(r));
}

void FakeTokenServer::Answer(int fd) {
  SluiceHello hello;
  if (!ReadAll(fd, &hello, sizeof(hello)))
    return;
  hellos_.fetch_add(1);
  ucred cred{};
  socklen_t len = sizeof(cred);
  getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len);
  uint32_t reason = reject_reason_.load();
  int claimed = -1;
  if (reason == 0 && hello.version_major != SLUICE_PROTO_MAJOR)
    reason = SLUICE_REJECT_VERSION;
  if (reason == 0 &&
      std::strncmp(hello.gpu_uuid, options_.gpu_uuid.c_str(), sizeof(hello.gpu_uuid)) != 0) {
    reason = SLUICE_REJECT_UNKNOWN_GPU;
  }
  for (uint32_t i = 0; reason == 0 && i < options_.slot_count && claimed < 0; ++i) {
    uint32_t free_state = SLUICE_SLOT_FREE;
    if (Ref(slot(i)->state).load() == free_state)
      claimed = static_cast<int>(i);
  }
  if (reason == 0 && claimed < 0)
    reason = SLUICE_REJECT_NO_SLOT;
  if (reason != 0) {
    SendReject(fd, reason);
    return;
  }
  SluiceSlot* s = slot(static_cast<uint32_t>(claimed));
  s->pid = static_cast<uint32_t>(cred.pid);
  s->instance_id = hello.instance_id;
  Ref(s->limit_ppm).store(options_.limit_ppm);
  Ref(s->request_ppm).store(options_.limit_ppm);
  Ref(s->time_quota_ppm).store(options_.time_quota_ppm);
  Ref(s->mem_limit_bytes).store(options_.mem_limit_bytes);
  Ref(s->budget).store(options_.initial_budget);
  const uint32_t generation = Ref(s->generation).fetch_add(1) + 1;
  Ref(s->state).store(static_cast<uint32_t>(SLUICE_SLOT_ACTIVE), std::memory_order_release);
  last_peer_pid_.store(cred.pid);
  SluiceWelcome w{};
  w.hdr = {SLUICE_MSG_MAGIC, SLUICE_MSG_WELCOME, sizeof(SluiceWelcome)};
  w.version_major = SLUICE_PROTO_MAJOR;
  w.version_minor = options_.welcome_minor;
  w.slot_index = static_cast<uint32_t>(claimed);
  w.generation = generation;
  w.shm_bytes = shm_bytes_;
  std::snprintf(w.shm_name, sizeof(w.shm_name), "%s", shm_name_.c_str());
  (void)!write(fd, &w, sizeof(w));
}

void FakeTokenServer::Refill(uint32_t i, int64_t tokens) {
  SluiceSlot* s = slot(i);
  auto budget = Ref(s->budget);
  int64_t old = budget.load();
  while (!budget.compare_exchange_weak(old, tokens + (old < 0 ? old : 0))) {
  }
  Ref(s->tokens_issued).store(tokens);
  const uint64_t seq = Ref(header_->period_seq).load() + 1;
  Ref(s->budget_period).store(seq, std::memory_order_release);
  Ref(header_->period_seq).store(seq, std::memory_order_release);
  Beat();
  Ref(s->futex_word).fetch_add(1, std::memory_order_seq_cst);
  if (Ref(s->waiters).load(std::memory_order_seq_cst) > 0) {
    syscall(SYS_futex, &s->futex_word, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
  }
}

void FakeTokenServer::Beat() {
  Ref(header_->heartbeat_ns).store(NowNs(), std::memory_order_release);
}

void FakeTokenServer::Stall() {
  Ref(header_->heartbeat_ns).store(int64_t{1}, std::memory_order_release);
}

}  // namespace sluice::intercept::testing
