// RegistrationServer: accept + SO_PEERCRED, message framing over a byte stream, hello routing,
// control updates, and slot retirement when a registered connection reaches EOF.
#include "runtime/agent/registration_server.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "runtime/agent/control_protocol.h"

namespace sluice::runtime {
namespace {

constexpr size_t kMaxMessageBytes = 4096;

absl::Status Errno(absl::string_view what) {
  return absl::InternalError(absl::StrCat(what, ": ", std::strerror(errno)));
}

template <typename T>
void SendStruct(int fd, const T& msg) {
  // A reply to a fresh connection fits its socket buffer; a peer that does not read loses it.
  [[maybe_unused]] ssize_t n = send(fd, &msg, sizeof(msg), MSG_NOSIGNAL | MSG_DONTWAIT);
}

// Reads the prefix of `msg` that `T` knows; the rest of the struct is zero.
template <typename T>
T Prefix(const std::string& msg) {
  T out;
  std::memset(&out, 0, sizeof(out));
  std::memcpy(&out, msg.data(), std::min(sizeof(out), msg.size()));
  return out;
}

void SendReject(int fd, uint32_t reason, const std::string& detail) {
  SendStruct(fd, MakeReject(reason, detail));
}

void SendAck(int fd, uint32_t status, const std::string& detail) {
  SluiceAck a;
  std::memset(&a, 0, sizeof(a));
  a.hdr = {SLUICE_MSG_MAGIC, SLUICE_MSG_ACK, sizeof(SluiceAck)};
  a.status = status;
  std::snprintf(a.detail, sizeof(a.detail), "%s", detail.c_str());
  SendStruct(fd, a);
}

absl::StatusOr<int> Listen(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(addr.sun_path)) {
    return absl::InvalidArgumentError(absl::StrCat("bad socket path '", path, "'"));
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return Errno("socket");
  const auto* sa = reinterpret_cast<const sockaddr*>(&addr);
  int rc = bind(fd, sa, sizeof(addr));
  if (rc != 0 && errno == EADDRINUSE) {
    // A leftover file: replace it unless a live server still answers on it.
    const int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const bool live = connect(probe, sa, sizeof(addr)) == 0;
    close(probe);
    if (live) {
      close(fd);
      return absl::AlreadyExistsError(absl::StrCat("a server already listens on ", path));
    }
    unlink(path.c_str());
    rc = bind(fd, sa, sizeof(addr));
  }
  if (rc != 0) {
    const absl::Status st = Errno(absl::StrCat("bind ", path));
    close(fd);
    return st;
  }
  chmod(path.c_str(), 0660);
  if (listen(fd, 64) != 0) {
    close(fd);
    return Errno("listen");
  }
  return fd;
}

}  // namespace

absl::StatusOr<std::unique_ptr<RegistrationServer>> RegistrationServer::Create(
    LoopEnv& loop, const RegistrationOptions& options) {
  absl::StatusOr<int> fd = Listen(options.socket_path);
  if (!fd.ok()) return fd.status();
  std::unique_ptr<RegistrationServer> s(new RegistrationServer(loop, options, *fd));
  RegistrationServer* raw = s.get();
  s->listen_watch_ = loop.WatchFd(*fd, [raw](short) { raw->OnAccept(); });
  return s;
}

RegistrationServer::RegistrationServer(LoopEnv& loop, const RegistrationOptions& options,
                                       int listen_fd)
    : loop_(loop), options_(options), listen_fd_(listen_fd) {}

RegistrationServer::~RegistrationServer() {
  loop_.RunSync([this] {
    loop_.Unwatch(listen_watch_);
    std::vector<int> fds;
    for (const auto& [fd, c] : conns_) fds.push_back(fd);
    for (int fd : fds) {
      loop_.Unwatch(conns_[fd].watch);
      close(fd);  // no retire: the client may be alive and will re-register with a new server
    }
    conns_.clear();
  });
  close(listen_fd_);
  unlink(options_.socket_path.c_str());
}

void RegistrationServer::AddGpu(TokenServer& server) {
  loop_.RunSync([this, &server] { gpus_[server.gpu_uuid()] = &server; });
}

void RegistrationServer::RemoveGpu(const std::string& gpu_uuid) {
  loop_.RunSync([this, &gpu_uuid] {
    gpus_.erase(gpu_uuid);
    for (auto& [fd, c] : conns_) {
      if (c.server != nullptr && c.server->gpu_uuid() == gpu_uuid) c.server = nullptr;
    }
  });
}

void RegistrationServer::OnAccept() {
  while (true) {
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;  // EAGAIN: drained (other errors: the next readiness retries)
    ucred cred{};
    socklen_t len = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
      close(fd);
      continue;
    }
    Conn& c = conns_[fd];
    c.fd = fd;
    c.peer = PeerCred{cred.pid, cred.uid, cred.gid};
    c.watch = loop_.WatchFd(fd, [this, fd](short) { OnReadable(fd); });
  }
}

void RegistrationServer::OnReadable(int fd) {
  auto it = conns_.find(fd);
  if (it == conns_.end()) return;
  Conn& c = it->second;
  char buf[1024];
  const ssize_t n = recv(fd, buf, sizeof(buf), 0);
  if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
    Close(fd);  // hang-up: the client exited or crashed
    return;
  }
  if (n < 0) return;
  if (c.server != nullptr) return;  // registered clients have nothing more to say
  c.buffer.append(buf, static_cast<size_t>(n));
  while (c.buffer.size() >= sizeof(SluiceMsgHeader)) {
    const auto hdr = Prefix<SluiceMsgHeader>(c.buffer);
    if (hdr.magic != SLUICE_MSG_MAGIC || hdr.bytes < sizeof(hdr) || hdr.bytes > kMaxMessageBytes) {
      SendReject(fd, SLUICE_REJECT_MALFORMED, "bad message header");
      Close(fd);
      return;
    }
    if (c.buffer.size() < hdr.bytes) return;  // wait for the rest
    const std::string msg = c.buffer.substr(0, hdr.bytes);
    c.buffer.erase(0, hdr.bytes);
    if (!Dispatch(c, msg)) {
      Close(fd);
      return;
    }
  }
}

bool RegistrationServer::Dispatch(Conn& c, const std::string& msg) {
  switch (Prefix<SluiceMsgHeader>(msg).type) {
    case SLUICE_MSG_HELLO: return HandleHello(c, msg);
    case SLUICE_MSG_UPDATE: return HandleUpdate(c, msg);
    default:
      SendReject(c.fd, SLUICE_REJECT_MALFORMED, "unexpected message type");
      return false;
  }
}

bool RegistrationServer::HandleHello(Conn& c, const std::string& msg) {
  if (msg.size() < sizeof(SluiceHello)) {
    SendReject(c.fd, SLUICE_REJECT_MALFORMED, "short hello");
    return false;
  }
  const auto hello = Prefix<SluiceHello>(msg);
  const auto& allowed = options_.allowed_uids;
  if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), c.peer.uid) == allowed.end()) {
    SendReject(c.fd, SLUICE_REJECT_DENIED, absl::StrCat("uid ", c.peer.uid, " not allowed"));
    return false;
  }
  std::string detail;
  if (const uint32_t reason = CheckHello(hello, &detail); reason != 0) {
    SendStruct(c.fd, MakeReject(reason, detail));
    return false;
  }
  const std::string uuid(hello.gpu_uuid, strnlen(hello.gpu_uuid, sizeof(hello.gpu_uuid)));
  auto gpu = gpus_.find(uuid);
  if (gpu == gpus_.end()) {
    SendReject(c.fd, SLUICE_REJECT_UNKNOWN_GPU, absl::StrCat("no token server for GPU ", uuid));
    return false;
  }
  TokenServer* server = gpu->second;
  const Admission a = server->Admit(c.peer, hello);
  if (!a.admitted) {
    SendStruct(c.fd, a.reject);
    return false;
  }
  SendStruct(c.fd, a.welcome);
  c.server = server;
  c.slot = a.welcome.slot_index;
  c.generation = a.welcome.generation;
  return true;
}

bool RegistrationServer::HandleUpdate(Conn& c, const std::string& msg) {
  if (msg.size() < sizeof(SluiceUpdate)) {
    SendAck(c.fd, SLUICE_ACK_INVALID, "short update");
    return false;
  }
  const auto u = Prefix<SluiceUpdate>(msg);
  if (c.peer.uid != 0 && c.peer.uid != geteuid()) {
    SendAck(c.fd, SLUICE_ACK_DENIED, absl::StrCat("uid ", c.peer.uid, " may not update"));
    return false;
  }
  if (u.version_major != SLUICE_PROTO_MAJOR) {
    SendAck(c.fd, SLUICE_ACK_VERSION, absl::StrCat("server major ", SLUICE_PROTO_MAJOR));
    return false;
  }
  auto gpu = gpus_.find(std::string(u.gpu_uuid, strnlen(u.gpu_uuid, sizeof(u.gpu_uuid))));
  if (gpu == gpus_.end()) {
    SendAck(c.fd, SLUICE_ACK_UNKNOWN_GPU, "no token server for that GPU");
    return false;
  }
  InstanceSpec spec;
  const bool has_q = u.version_minor >= SLUICE_PROTO_MINOR_TIME_QUOTA && u.time_quota_ppm != 0;
  spec.quota = {u.request_ppm / 1e6, u.limit_ppm / 1e6, has_q ? u.time_quota_ppm / 1e6 : 1.0};
  spec.slo_sensitive = u.priority == SLUICE_PRIO_SLO;
  spec.llm = (u.flags & SLUICE_SLOT_FLAG_LLM) != 0;
  spec.mem_limit_bytes = u.mem_limit_bytes;
  const absl::Status st = gpu->second->SetInstanceSpec(common::InstanceId(u.instance_id), spec);
  SendAck(c.fd, st.ok() ? SLUICE_ACK_OK : SLUICE_ACK_INVALID, std::string(st.message()));
  return false;
}

void RegistrationServer::Close(int fd) {
  auto it = conns_.find(fd);
  if (it == conns_.end()) return;
  if (it->second.server != nullptr) it->second.server->Retire(it->second.slot, it->second.generation);
  loop_.Unwatch(it->second.watch);
  close(fd);
  conns_.erase(it);
}

}  // namespace sluice::runtime
