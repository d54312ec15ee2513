// HttpProbe: the InstanceProbe of the agent daemon over runtime/http's async Client:
// GET /v2/health/ready (200 = ready) and GET /sluice/v1/stats ("in_flight") on 127.0.0.1:port.
// Thread safety: calls from any thread; answers run on the client's EventLoop.
#ifndef SLUICE_RUNTIME_AGENT_HTTP_PROBE_H_
#define SLUICE_RUNTIME_AGENT_HTTP_PROBE_H_

#include "runtime/agent/instance_supervisor.h"
#include "runtime/http/http.h"

namespace sluice::runtime {

class HttpProbe : public InstanceProbe {
 public:
  // `client` is borrowed and must outlive this object; `timeout` bounds each probe.
  HttpProbe(http::Client& client, absl::Duration timeout) : client_(client), timeout_(timeout) {}
  void CheckReady(int port, absl::AnyInvocable<void(bool ready)> done) override;
  void InFlight(int port, absl::AnyInvocable<void(absl::StatusOr<int64_t>)> done) override;

 private:
  http::Client& client_;
  const absl::Duration timeout_;
};

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_AGENT_HTTP_PROBE_H_
