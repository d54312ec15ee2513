// Blocking socket helpers for SendInstanceUpdate and SendHello: connect with send/receive
// timeouts, write one message, read one reply (its prefix that we know).
#include "runtime/agent/agent_client.h"

#include <sys/socket.h>
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

absl::StatusOr<int> Connect(const std::string& path, absl::Duration timeout) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) return absl::InvalidArgumentError("path too long");
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::UnavailableError(absl::StrCat("socket: ", std::strerror(errno)));
  const timeval tv = absl::ToTimeval(timeout);
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  if (connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    const absl::Status st =
        absl::UnavailableError(absl::StrCat("connect ", path, ": ", std::strerror(errno)));
    close(fd);
    return st;
  }
  return fd;
}

// Reads one whole message (header, then the rest) into `out`.
absl::Status ReadMessage(int fd, std::string* out) {
  out->clear();
  size_t want = sizeof(SluiceMsgHeader);
  while (out->size() < want) {
    char buf[256];
    const ssize_t n = recv(fd, buf, std::min(sizeof(buf), want - out->size()), 0);
    if (n <= 0) {
      return absl::UnavailableError(n == 0 ? "server closed the connection"
                                           : absl::StrCat("recv: ", std::strerror(errno)));
    }
    out->append(buf, static_cast<size_t>(n));
    if (out->size() == sizeof(SluiceMsgHeader)) {
      SluiceMsgHeader h;
      std::memcpy(&h, out->data(), sizeof(h));
      if (h.magic != SLUICE_MSG_MAGIC || h.bytes < sizeof(h)) {
        return absl::DataLossError("bad reply header");
      }
      want = h.bytes;
    }
  }
  return absl::OkStatus();
}

template <typename T>
T Prefix(const std::string& msg) {
  T out;
  std::memset(&out, 0, sizeof(out));
  std::memcpy(&out, msg.data(), std::min(sizeof(out), msg.size()));
  return out;
}

uint32_t Ppm(double share) {
  return static_cast<uint32_t>(std::lround(std::clamp(share, 0.0, 1.0) * 1e6));
}

}  // namespace

absl::Status SendInstanceUpdate(const std::string& socket_path, const std::string& gpu_uuid,
                                common::InstanceId instance, const InstanceSpec& spec,
                                absl::Duration timeout) {
  SluiceUpdate u;
  std::memset(&u, 0, sizeof(u));
  u.hdr = {SLUICE_MSG_MAGIC, SLUICE_MSG_UPDATE, sizeof(SluiceUpdate)};
  u.version_major = SLUICE_PROTO_MAJOR;
  u.version_minor = SLUICE_PROTO_MINOR;
  u.priority = spec.slo_sensitive ? SLUICE_PRIO_SLO : SLUICE_PRIO_BEST_EFFORT;
  u.instance_id = instance.value();
  u.request_ppm = Ppm(spec.quota.request);
  u.limit_ppm = Ppm(spec.quota.limit);
  u.flags = spec.llm ? SLUICE_SLOT_FLAG_LLM : 0;
  u.time_quota_ppm = std::max<uint32_t>(1, Ppm(spec.quota.time_quota));
  u.mem_limit_bytes = spec.mem_limit_bytes;
  std::snprintf(u.gpu_uuid, sizeof(u.gpu_uuid), "%s", gpu_uuid.c_str());
  absl::StatusOr<int> fd = Connect(socket_path, timeout);
  if (!fd.ok()) return fd.status();
  std::string reply;
  absl::Status st = send(*fd, &u, sizeof(u), MSG_NOSIGNAL) == sizeof(u)
                        ? ReadMessage(*fd, &reply)
                        : absl::UnavailableError("send failed");
  close(*fd);
  if (!st.ok()) return st;
  const auto ack = Prefix<SluiceAck>(reply);
  const std::string detail(ack.detail, strnlen(ack.detail, sizeof(ack.detail)));
  if (ack.hdr.type != SLUICE_MSG_ACK) return absl::DataLossError("reply is not an ack");
  switch (ack.status) {
    case SLUICE_ACK_OK: return absl::OkStatus();
    case SLUICE_ACK_DENIED: return absl::PermissionDeniedError(detail);
    case SLUICE_ACK_UNKNOWN_GPU: return absl::NotFoundError(detail);
    case SLUICE_ACK_VERSION: return absl::FailedPreconditionError(detail);
    default: return absl::InvalidArgumentError(detail);
  }
}

SluiceHello MakeHello(const std::string& gpu_uuid, int64_t instance_id, int32_t requested_slot) {
  SluiceHello h;
  std::memset(&h, 0, sizeof(h));
  h.hdr = {SLUICE_MSG_MAGIC, SLUICE_MSG_HELLO, sizeof(SluiceHello)};
  h.version_major = SLUICE_PROTO_MAJOR;
  h.version_minor = SLUICE_PROTO_MINOR;
  h.pid = static_cast<uint32_t>(getpid());
  h.instance_id = instance_id;
  h.requested_slot = requested_slot;
  std::snprintf(h.gpu_uuid, sizeof(h.gpu_uuid), "%s", gpu_uuid.c_str());
  return h;
}

absl::StatusOr<HelloReply> SendHello(const std::string& socket_path, const SluiceHello& hello,
                                     absl::Duration timeout) {
  absl::StatusOr<int> fd = Connect(socket_path, timeout);
  if (!fd.ok()) return fd.status();
  std::string reply;
  absl::Status st = send(*fd, &hello, sizeof(hello), MSG_NOSIGNAL) == sizeof(hello)
                        ? ReadMessage(*fd, &reply)
                        : absl::UnavailableError("send failed");
  if (!st.ok()) {
    close(*fd);
    return st;
  }
  HelloReply r;
  const auto hdr = Prefix<SluiceMsgHeader>(reply);
  if (hdr.type == SLUICE_MSG_WELCOME) {
    r.welcomed = true;
    r.welcome = Prefix<SluiceWelcome>(reply);
    r.fd = *fd;
  } else {
    r.reject = Prefix<SluiceReject>(reply);
    close(*fd);
  }
  return r;
}

}  // namespace sluice::runtime
