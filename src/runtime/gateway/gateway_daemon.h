// GatewayDaemon: the front door of the platform (docs/platform.md, "Gateway"): KServe v2 on
// host:port, per-function bounded queues with dynamic batching (core/serving), capacity-weighted
// dispatch of batches to instances over `POST /sluice/v1/batch`, cold-start holding, deadlines,
// retries and Prometheus /metrics; routes polled from the controller, load pushed back to it.
// Thread safety: Start/Stop/port from any thread but the daemon's own loop; all state lives on
// one http::EventLoop owned by the daemon.
#ifndef SLUICE_RUNTIME_GATEWAY_GATEWAY_DAEMON_H_
#define SLUICE_RUNTIME_GATEWAY_GATEWAY_DAEMON_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace sluice::runtime {

struct GatewayOptions {
  std::string host = "127.0.0.1";
  int port = 7070;  // 0: an ephemeral port (see port())
  // The controller's "host:port", or several comma-separated (a failed poll or a follower's 503
  // moves the gateway to the leader).
  std::string controller = "127.0.0.1:7071";
  // This replica's id in its load reports (empty: "<host>:<port>"); the controller sums the
  // reports of all gateways, per id.
  std::string id;
  absl::Duration routes_poll = absl::Milliseconds(100);
  absl::Duration load_report = absl::Seconds(1);
  // Retries of a request on another instance after its instance failed (Unavailable or 5xx
  // from /sluice/v1/batch); past them the request is answered 502.
  int max_retries = 2;
  // Batches in flight per instance at most (one executing, one ready behind it): further
  // requests wait in the gateway's queue, where they form larger batches. 0: unlimited.
  int max_batches_per_instance = 2;
};

namespace internal {
class GatewayCore;
}  // namespace internal

class GatewayDaemon {
 public:
  // Starts the event loop, binds host:port and starts polling the controller; returns at once.
  // InvalidArgument for bad options, Unavailable when the bind fails.
  static absl::StatusOr<std::unique_ptr<GatewayDaemon>> Start(const GatewayOptions& options);
  GatewayDaemon(const GatewayDaemon&) = delete;
  GatewayDaemon& operator=(const GatewayDaemon&) = delete;
  ~GatewayDaemon();  // Stop()s

  int port() const;
  // Stops serving and the loop; requests still queued or in flight are dropped (their
  // connections close). Idempotent.
  void Stop();

  // Test hooks. The route table version last applied (-1 before the first), read on the loop.
  int64_t routes_version() const;
  // Prometheus text of the daemon's registry (same as GET /metrics).
  std::string RenderMetrics() const;

 private:
  GatewayDaemon();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_GATEWAY_GATEWAY_DAEMON_H_
