// Blocking TCP helpers of the multicast chain (chain_sender.cc, chain_receiver.cc): connect with a
// timeout, whole-buffer send/recv, sendfile from a memfd, per-socket IO timeouts. Every failure is
// a Status naming the peer; a timeout is DeadlineExceeded, a closed peer Unavailable.
// Thread safety: stateless; a socket is used by one thread per direction.
#ifndef SLUICE_RUNTIME_PARAMSTORE_CHAIN_SOCKET_H_
#define SLUICE_RUNTIME_PARAMSTORE_CHAIN_SOCKET_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "runtime/paramstore/segment.h"

namespace sluice::runtime {

// "host:port" with a numeric or resolvable host and a port in [1, 65535]; InvalidArgument
// naming `field` otherwise.
absl::Status ValidateAddress(const std::string& address, const std::string& field);

// A connected TCP socket (close-on-exec, TCP_NODELAY, large buffers, SO_RCVTIMEO/SO_SNDTIMEO =
// io_timeout). Unavailable when nothing listens; DeadlineExceeded after `timeout`.
absl::StatusOr<int> ConnectTo(const std::string& address, absl::Duration timeout,
                              absl::Duration io_timeout);
// A listening socket on host:port (port 0: ephemeral); returns the fd, `port` gets the port.
absl::StatusOr<int> Listen(const std::string& host, int port, int& bound_port);
void SetIoTimeout(int fd, absl::Duration io_timeout);

absl::Status SendAll(int fd, const void* data, size_t size, bool more = false);
absl::Status RecvAll(int fd, void* data, size_t size);
// Sends [offset, offset + size) of file `src` (a memfd) with sendfile(2): the socket takes page
// references, no user-space copy.
absl::Status SendFileAll(int fd, int src, int64_t offset, int64_t size);
// Sends [offset, offset + size) of a segment whose bytes live in several files (arena chunks):
// `file_at(o)` says where byte o is (segment.h); sendfile span by span.
absl::Status SendSegmentRange(int fd, const std::function<FileSpan(int64_t)>& file_at,
                              int64_t offset, int64_t size);

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_PARAMSTORE_CHAIN_SOCKET_H_
