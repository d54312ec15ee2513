#include "runtime/paramstore/fd_server.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace sluice::runtime {
namespace {

constexpr size_t kMaxLine = 256;

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

bool SendWithFd(int sock, const std::string& text, int fd) {
  iovec iov{const_cast<char*>(text.data()), text.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  if (fd >= 0) {
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof(int));
  }
  return sendmsg(sock, &msg, MSG_NOSIGNAL) == static_cast<ssize_t>(text.size());
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
    threads_.emplace_back([this, fd] { Serve(fd); });
  }
}

void ParamFdServer::Serve(int fd) {
  std::string model;
  if (ReadLine(fd, model)) {
    absl::StatusOr<std::unique_ptr<ParamLease>> lease = store_.Acquire(model);
    if (!lease.ok()) {
      SendWithFd(fd, absl::StrCat("ERR ", absl::StatusCodeToString(lease.status().code()), " ",
                                  lease.status().message(), "\n"), -1);
    } else if (SendWithFd(fd, absl::StrCat("OK ", (*lease)->size(), "\n"), (*lease)->fd())) {
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
  std::vector<std::thread> threads;
  {
    absl::MutexLock l(&mu_);
    if (stopped_) return;
    stopped_ = true;
    shutdown(listen_fd_, SHUT_RDWR);
    for (int fd : fds_) shutdown(fd, SHUT_RDWR);
  }
  if (accept_thread_.joinable()) accept_thread_.join();
  {
    absl::MutexLock l(&mu_);
    threads = std::move(threads_);
  }
  for (std::thread& t : threads) t.join();
  close(listen_fd_);
  unlink(path_.c_str());
}

absl::StatusOr<std::unique_ptr<ParamClient>> ParamClient::Open(const std::string& socket_path,
                                                               const std::string& model) {
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
  char buf[kMaxLine];
  iovec iov{buf, sizeof(buf) - 1};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  const ssize_t n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
  int seg_fd = -1;
  if (cmsghdr* c = CMSG_FIRSTHDR(&msg); n > 0 && c != nullptr && c->cmsg_type == SCM_RIGHTS) {
    std::memcpy(&seg_fd, CMSG_DATA(c), sizeof(int));
  }
  const std::string reply(buf, n > 0 ? static_cast<size_t>(n) : 0);
  int64_t bytes = -1;
  if (reply.rfind("OK ", 0) != 0 || seg_fd < 0 ||
      !absl::SimpleAtoi(reply.substr(3, reply.find('\n') - 3), &bytes)) {
    if (seg_fd >= 0) close(seg_fd);
    close(fd);
    const std::string why = reply.rfind("ERR ", 0) == 0 ? reply.substr(4) : "bad reply";
    if (why.rfind("NOT_FOUND", 0) == 0) return absl::NotFoundError(why);
    return absl::UnavailableError("parameter store: " + why);
  }
  absl::StatusOr<std::unique_ptr<ParamSegment>> seg = ParamSegment::MapReadOnly(seg_fd, bytes);
  if (!seg.ok()) {
    close(fd);
    return seg.status();
  }
  return std::unique_ptr<ParamClient>(new ParamClient(fd, std::move(*seg)));
}

ParamClient::~ParamClient() { close(conn_); }

}  // namespace sluice::runtime
