// Client side of the registration handshake. Messages are fixed-size structs; a newer server may
// send a longer message (its `bytes`), of which we read and keep the prefix we know.
#include "intercept/token_client.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace sluice::intercept {
namespace {

bool SendAll(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool RecvAll(int fd, void* data, size_t n) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    const ssize_t r = recv(fd, p, n, 0);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

// Reads one message: header, then up to `capacity` bytes of body kept, the rest discarded.
bool RecvMessage(int fd, void* buf, size_t capacity, SluiceMsgHeader* hdr) {
  if (!RecvAll(fd, hdr, sizeof(*hdr)))
    return false;
  if (hdr->magic != SLUICE_MSG_MAGIC || hdr->bytes < sizeof(*hdr))
    return false;
  std::memset(buf, 0, capacity);
  std::memcpy(buf, hdr, sizeof(*hdr));
  const size_t body = hdr->bytes - sizeof(*hdr);
  const size_t keep = body < capacity - sizeof(*hdr) ? body : capacity - sizeof(*hdr);
  if (!RecvAll(fd, static_cast<char*>(buf) + sizeof(*hdr), keep))
    return false;
  char sink[64];
  for (size_t left = body - keep; left > 0;) {
    const size_t chunk = left < sizeof(sink) ? left : sizeof(sink);
    if (!RecvAll(fd, sink, chunk))
      return false;
    left -= chunk;
  }
  return true;
}

int Connect(const RegisterRequest& req, char* error, size_t error_bytes) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (std::strlen(req.socket_path) >= sizeof(addr.sun_path)) {
    std::snprintf(error, error_bytes, "socket path too long: %s", req.socket_path);
    return -1;
  }
  std::strcpy(addr.sun_path, req.socket_path);
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    std::snprintf(error, error_bytes, "socket: %s", std::strerror(errno));
    return -1;
  }
  timeval tv{static_cast<time_t>(req.timeout_ns / 1000000000),
             static_cast<suseconds_t>(req.timeout_ns % 1000000000 / 1000)};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  if (connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    std::snprintf(error, error_bytes, "connect %s: %s", req.socket_path, std::strerror(errno));
    close(fd);
    return -1;
  }
  return fd;
}

bool MapSegment(const SluiceWelcome& w, Registration* out, char* error, size_t error_bytes) {
  char name[SLUICE_SHM_NAME_BYTES + 1];
  std::memcpy(name, w.shm_name, SLUICE_SHM_NAME_BYTES);
  name[SLUICE_SHM_NAME_BYTES] = '\0';
  const int fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);
  if (fd < 0) {
    std::snprintf(error, error_bytes, "shm_open %s: %s", name, std::strerror(errno));
    return false;
  }
  void* p = mmap(nullptr, w.shm_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) {
    std::snprintf(error, error_bytes, "mmap %s: %s", name, std::strerror(errno));
    return false;
  }
  auto* header = static_cast<SluiceShmHeader*>(p);
  if (!CheckSegment(header, w.shm_bytes, w.slot_index, error, error_bytes)) {
    munmap(p, w.shm_bytes);
    return false;
  }
  out->header = header;
  out->slot = SluiceShmSlots(header) + w.slot_index;
  out->slot_index = w.slot_index;
  out->generation = w.generation;
  out->version_minor = w.version_minor;
  return true;
}

}  // namespace

int64_t MonotonicNowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

void FormatGpuUuid(const unsigned char b[16], char out[SLUICE_UUID_BYTES]) {
  std::snprintf(out, SLUICE_UUID_BYTES,
                "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                b[14], b[15]);
}

bool CheckSegment(const SluiceShmHeader* h, size_t mapped_bytes, uint32_t slot_index, char* error,
                  size_t error_bytes) {
  const uint64_t magic = __atomic_load_n(&h->magic, __ATOMIC_ACQUIRE);
  const char* why = nullptr;
  if (mapped_bytes < sizeof(SluiceShmHeader) || magic != SLUICE_SHM_MAGIC) {
    why = "bad magic";
  } else if (h->version_major != SLUICE_PROTO_MAJOR) {
    why = "protocol major mismatch";
  } else if (h->header_bytes < sizeof(SluiceShmHeader) || h->slot_bytes != sizeof(SluiceSlot) ||
             h->header_bytes % SLUICE_CACHE_LINE != 0) {
    why = "layout mismatch";
  } else if (slot_index >= h->slot_count ||
             h->header_bytes + static_cast<size_t>(h->slot_count) * h->slot_bytes > mapped_bytes) {
    why = "slot outside the segment";
  }
  if (why == nullptr)
    return true;
  std::snprintf(error, error_bytes, "segment rejected: %s", why);
  return false;
}

namespace {

SluiceHello MakeHello(const RegisterRequest& req) {
  SluiceHello hello{};
  hello.hdr = {SLUICE_MSG_MAGIC, SLUICE_MSG_HELLO, sizeof(SluiceHello)};
  hello.version_major = SLUICE_PROTO_MAJOR;
  hello.version_minor = SLUICE_PROTO_MINOR;
  hello.pid = static_cast<uint32_t>(getpid());
  hello.instance_id = req.instance_id;
  hello.requested_slot = req.requested_slot;
  std::snprintf(hello.gpu_uuid, sizeof(hello.gpu_uuid), "%s", req.gpu_uuid);
  return hello;
}

// Sends hello on `fd`, reads the answer, maps the segment on a welcome.
bool Handshake(int fd, const RegisterRequest& req, Registration* out, char* error,
               size_t error_bytes) {
  const SluiceHello hello = MakeHello(req);
  union {
    SluiceMsgHeader hdr;
    SluiceWelcome welcome;
    SluiceReject reject;
  } reply;
  SluiceMsgHeader hdr;
  errno = 0;
  if (!SendAll(fd, &hello, sizeof(hello)) || !RecvMessage(fd, &reply, sizeof(reply), &hdr)) {
    std::snprintf(error, error_bytes, "handshake with %s failed: %s", req.socket_path,
                  errno != 0 ? std::strerror(errno) : "malformed reply");
    return false;
  }
  if (hdr.type == SLUICE_MSG_REJECT) {
    reply.reject.detail[sizeof(reply.reject.detail) - 1] = '\0';
    std::snprintf(error, error_bytes, "rejected by server v%u.%u: reason %u: %s",
                  reply.reject.version_major, reply.reject.version_minor, reply.reject.reason,
                  reply.reject.detail);
    return false;
  }
  if (hdr.type != SLUICE_MSG_WELCOME || hdr.bytes < sizeof(SluiceWelcome)) {
    std::snprintf(error, error_bytes, "unexpected message type %u", hdr.type);
    return false;
  }
  if (reply.welcome.version_major != SLUICE_PROTO_MAJOR) {
    std::snprintf(error, error_bytes, "server speaks protocol %u, we speak %u",
                  reply.welcome.version_major, SLUICE_PROTO_MAJOR);
    return false;
  }
  return MapSegment(reply.welcome, out, error, error_bytes);
}

}  // namespace

bool Register(const RegisterRequest& req, Registration* out, char* error, size_t error_bytes) {
  error[0] = '\0';
  const int fd = Connect(req, error, error_bytes);
  if (fd < 0)
    return false;
  if (!Handshake(fd, req, out, error, error_bytes)) {
    close(fd);
    return false;
  }
  out->socket_fd = fd;
  return true;
}

}  // namespace sluice::intercept
