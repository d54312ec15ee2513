#include "runtime/paramstore/chain_socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace sluice::runtime {
namespace {

constexpr int kSocketBuffer = 8 << 20;

absl::Status IoError(const char* what, int e) {
  if (e == EAGAIN || e == EWOULDBLOCK || e == ETIMEDOUT) {
    return absl::DeadlineExceededError(absl::StrCat(what, ": timed out"));
  }
  return absl::UnavailableError(absl::StrCat(what, ": ", std::strerror(e)));
}

bool SplitAddress(const std::string& address, std::string& host, int& port) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0) return false;
  host = address.substr(0, colon);
  return absl::SimpleAtoi(address.substr(colon + 1), &port) && port >= 1 && port <= 65535;
}

absl::StatusOr<sockaddr_in> Resolve(const std::string& address) {
  std::string host;
  int port = 0;
  if (!SplitAddress(address, host, port)) {
    return absl::InvalidArgumentError("address '" + address + "' is not host:port");
  }
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, host.c_str(), &a.sin_addr) == 1) return a;
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0 || res == nullptr) {
    return absl::InvalidArgumentError("address '" + address + "': cannot resolve host");
  }
  a.sin_addr = reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr;
  freeaddrinfo(res);
  return a;
}

void Tune(int fd) {
  const int one = 1, buf = kSocketBuffer;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
}

}  // namespace

absl::Status ValidateAddress(const std::string& address, const std::string& field) {
  std::string host;
  int port = 0;
  if (!SplitAddress(address, host, port)) {
    return absl::InvalidArgumentError(
        absl::StrCat("field '", field, "': '", address, "' is not host:port"));
  }
  return absl::OkStatus();
}

void SetIoTimeout(int fd, absl::Duration io_timeout) {
  const timeval tv = absl::ToTimeval(io_timeout);
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

absl::StatusOr<int> ConnectTo(const std::string& address, absl::Duration timeout,
                              absl::Duration io_timeout) {
  absl::StatusOr<sockaddr_in> a = Resolve(address);
  if (!a.ok()) return a.status();
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return IoError("socket", errno);
  Tune(fd);
  int rc = connect(fd, reinterpret_cast<const sockaddr*>(&*a), sizeof(*a));
  if (rc != 0 && errno == EINPROGRESS) {
    pollfd p{fd, POLLOUT, 0};
    rc = poll(&p, 1, static_cast<int>(absl::ToInt64Milliseconds(timeout)));
    int err = 0;
    socklen_t len = sizeof(err);
    if (rc == 0) err = ETIMEDOUT;
    else if (rc < 0) err = errno;
    else getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      close(fd);
      return IoError(absl::StrCat("connect ", address).c_str(), err);
    }
  } else if (rc != 0) {
    const int e = errno;
    close(fd);
    return IoError(absl::StrCat("connect ", address).c_str(), e);
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  SetIoTimeout(fd, io_timeout);
  return fd;
}

absl::StatusOr<int> Listen(const std::string& host, int port, int& bound_port) {
  absl::StatusOr<sockaddr_in> a = Resolve(absl::StrCat(host, ":", port == 0 ? 1 : port));
  if (!a.ok()) return a.status();
  a->sin_port = htons(static_cast<uint16_t>(port));
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return IoError("socket", errno);
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  Tune(fd);  // inherited by accepted sockets
  socklen_t len = sizeof(*a);
  if (bind(fd, reinterpret_cast<const sockaddr*>(&*a), sizeof(*a)) != 0 || listen(fd, 64) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&*a), &len) != 0) {
    const int e = errno;
    close(fd);
    return IoError(absl::StrCat("listen on ", host, ":", port).c_str(), e);
  }
  bound_port = ntohs(a->sin_port);
  return fd;
}

absl::Status SendAll(int fd, const void* data, size_t size, bool more) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = send(fd, p, size, MSG_NOSIGNAL | (more ? MSG_MORE : 0));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return IoError("send", n < 0 ? errno : EPIPE);
    p += n;
    size -= static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

absl::Status RecvAll(int fd, void* data, size_t size) {
  char* p = static_cast<char*>(data);
  while (size > 0) {
    const ssize_t n = recv(fd, p, size, MSG_WAITALL);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) return absl::UnavailableError("recv: connection closed by peer");
    if (n < 0) return IoError("recv", errno);
    p += n;
    size -= static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

absl::Status SendFileAll(int fd, int src, int64_t offset, int64_t size) {
  // sendfile has no MSG_NOSIGNAL: block SIGPIPE on this thread around it and swallow the one a
  // vanished peer raises, so a dead chain member is an error, not the end of the agent.
  sigset_t pipe_set, old;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  off_t off = offset;
  absl::Status status;
  while (size > 0) {
    const ssize_t n = sendfile(fd, src, &off, static_cast<size_t>(size));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int e = n < 0 ? errno : EPIPE;
      if (e == EPIPE) {
        const timespec zero{0, 0};
        sigtimedwait(&pipe_set, nullptr, &zero);
      }
      status = IoError("sendfile", e);
      break;
    }
    size -= n;
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return status;
}

absl::Status SendSegmentRange(int fd, const std::function<FileSpan(int64_t)>& file_at,
                              int64_t offset, int64_t size) {
  const int64_t end = offset + size;
  while (offset < end) {
    const FileSpan s = file_at(offset);
    const int64_t n = std::min(s.bytes, end - offset);
    if (s.fd < 0 || n <= 0) return absl::InternalError("segment range out of bounds");
    SLUICE_RETURN_IF_ERROR(SendFileAll(fd, s.fd, s.offset, n));
    offset += n;
  }
  return absl::OkStatus();
}

}  // namespace sluice::runtime
