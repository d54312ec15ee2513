#include "runtime/paramstore/fd_server.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/status.h"

namespace sluice::runtime {
namespace {

constexpr size_t kMaxLine = 256;
constexpr size_t kFdsPerMessage = 128;  // SCM_RIGHTS carries at most 253 per message

// Reads one '\n'-terminated line (without it); false on EOF, error or an overlong line.
bool ReadLine(int fd, std::string& line) {
  line.clear();
  char c;
  while (line.size() < kMaxLine) {
    const ssize_t n = recv(fd, &c, 1, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    if (c == '\n') return true;
    line.push_back(c);
  }
  return false;
}

bool SendText(int sock, const std::string& text) {
  return send(sock, text.data(), text.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(text.size());
}

// One byte 'F' carrying `fds` (at most kFdsPerMessage).
bool SendFds(int sock, const int* fds, size_t n) {
  char f = 'F';
  iovec iov{&f, 1};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kFdsPerMessage)] = {};
  msg.msg_control = control;
  msg.msg_controllen = CMSG_SPACE(sizeof(int) * n);
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int) * n);
  std::memcpy(CMSG_DATA(c), fds, sizeof(int) * n);
  return sendmsg(sock, &msg, MSG_NOSIGNAL) == 1;
}

// Receives one SendFds message into `out`; false on error or a message without fds.
bool RecvFds(int sock, std::vector<int>& out) {
  char f = 0;
  iovec iov{&f, 1};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kFdsPerMessage)] = {};
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  ssize_t n;
  do {
    n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  bool got = false;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < k; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      out.push_back(fd);
    }
    got = k > 0;
  }
  return n == 1 && f == 'F' && got && (msg.msg_flags & MSG_CTRUNC) == 0;
}

absl::StatusOr<int> UnixSocket(const std::string& path, sockaddr_un& a) {
  if (path.size() >= sizeof(a.sun_path)) {
    return absl::InvalidArgumentError("socket path too long: " + path);
  }
  a.sun_family = AF_UNIX;
  std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::UnavailableError(absl::StrCat("socket: ", std::strerror(errno)));
  return fd;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ParamFdServer>> ParamFdServer::Start(
    ParamStore& store, const std::string& socket_path) {
  sockaddr_un a{};
  SLUICE_ASSIGN_OR_RETURN(int fd, UnixSocket(socket_path, a));
  unlink(socket_path.c_str());
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || listen(fd, 64) != 0) {
    const int e = errno;
    close(fd);
    return absl::UnavailableError(absl::StrCat("bind ", socket_path, ": ", std::strerror(e)));
  }
  std::unique_ptr<ParamFdServer> s(new ParamFdServer(store, socket_path, fd));
  s->accept_thread_ = std::thread([p = s.get()] { p->AcceptLoop(); });
  return s;
}

ParamFdServer::~ParamFdServer() { Stop(); }

void ParamFdServer::AcceptLoop() {
  for (;;) {
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return;
    }
    absl::MutexLock l(&mu_);
    if (stopped_) {
      close(fd);
      return;
    }
    fds_.insert(fd);
    threads_.Start([this, fd] { Serve(fd); });
  }
}

namespace {

// "OK ..." and the chunk fds of `lease`.
bool SendLease(int fd, const ParamLease& lease) {
  const std::vector<int> fds = lease.fds();
  if (!SendText(fd, absl::StrCat("OK ", lease.size(), " ", lease.chunk_bytes(), " ", fds.size(),
                                 "\n"))) {
    return false;
  }
  for (size_t i = 0; i < fds.size(); i += kFdsPerMessage) {
    if (!SendFds(fd, fds.data() + i, std::min(kFdsPerMessage, fds.size() - i))) return false;
  }
  return true;
}

}  // namespace

void ParamFdServer::Serve(int fd) {
  std::string model;
  if (ReadLine(fd, model)) {
    absl::StatusOr<std::unique_ptr<ParamLease>> lease = store_.Acquire(model);
    if (!lease.ok()) {
      SendText(fd, absl::StrCat("ERR ", absl::StatusCodeToString(lease.status().code()), " ",
                                lease.status().message(), "\n"));
    } else if (SendLease(fd, **lease)) {
      char c;  // hold the pin until the client closes (or dies)
      while (recv(fd, &c, 1, 0) > 0 || errno == EINTR) {
      }
    }
  }
  absl::MutexLock l(&mu_);
  fds_.erase(fd);
  close(fd);
}

void ParamFdServer::Stop() {
  {
    absl::MutexLock l(&mu_);
    if (stopped_) return;
    stopped_ = true;
    shutdown(listen_fd_, SHUT_RDWR);
    for (int fd : fds_) shutdown(fd, SHUT_RDWR);
  }
  if (accept_thread_.joinable()) accept_thread_.join();
  threads_.JoinAll();
  close(listen_fd_);
  unlink(path_.c_str());
}

absl::StatusOr<std::unique_ptr<ParamClient>> ParamClient::Open(const std::string& socket_path,
                                                               const std::string& model,
                                                               bool populate) {
  return OpenImpl(socket_path, model, populate ? Mode::kMapPopulate : Mode::kMap);
}

absl::StatusOr<std::unique_ptr<ParamClient>> ParamClient::OpenFds(const std::string& socket_path,
                                                                  const std::string& model) {
  return OpenImpl(socket_path, model, Mode::kFds);
}

absl::StatusOr<std::unique_ptr<ParamClient>> ParamClient::OpenImpl(const std::string& socket_path,
                                                                   const std::string& model,
                                                                   Mode mode) {
  sockaddr_un a{};
  SLUICE_ASSIGN_OR_RETURN(int fd, UnixSocket(socket_path, a));
  const std::string request = model + "\n";
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
          static_cast<ssize_t>(request.size())) {
    const int e = errno;
    close(fd);
    return absl::UnavailableError(absl::StrCat("parameter socket ", socket_path, ": ",
                                               std::strerror(e)));
  }
  std::string reply;
  if (!ReadLine(fd, reply)) reply.clear();
  int64_t bytes = -1, chunk_bytes = -1, chunks = -1;
  const std::vector<std::string> f = absl::StrSplit(reply, ' ');
  if (f.size() != 4 || f[0] != "OK" || !absl::SimpleAtoi(f[1], &bytes) ||
      !absl::SimpleAtoi(f[2], &chunk_bytes) || !absl::SimpleAtoi(f[3], &chunks) || chunks < 1 ||
      chunks > (int64_t{1} << 20)) {
    close(fd);
    const std::string why = reply.rfind("ERR ", 0) == 0 ? reply.substr(4) : "bad reply";
    if (why.rfind("NOT_FOUND", 0) == 0) return absl::NotFoundError(why);
    return absl::UnavailableError("parameter store: " + why);
  }
  std::vector<int> fds;
  while (static_cast<int64_t>(fds.size()) < chunks) {
    if (!RecvFds(fd, fds)) break;
  }
  if (static_cast<int64_t>(fds.size()) != chunks) {
    for (int c : fds) close(c);
    close(fd);
    return absl::UnavailableError(absl::StrCat("parameter store: received ", fds.size(), " of ",
                                               chunks, " chunk fds"));
  }
  std::unique_ptr<ParamClient> client(new ParamClient(fd, bytes, chunk_bytes));
  if (mode == Mode::kFds) {
    if (chunks != (bytes + chunk_bytes - 1) / chunk_bytes) {
      for (int c : fds) close(c);
      return absl::UnavailableError("parameter store: chunk count does not match the size");
    }
    client->fds_ = std::move(fds);
    return client;
  }
  SLUICE_ASSIGN_OR_RETURN(client->segment_,
                          ParamSegment::MapChunksReadOnly(std::move(fds), chunk_bytes, bytes,
                                                          mode == Mode::kMapPopulate));
  return client;
}

ParamClient::~ParamClient() {
  for (int fd : fds_) close(fd);
  close(conn_);
}

}  // namespace sluice::runtime
