// AgentDaemon: the node agent (docs/platform.md "Agent API", :7072). Discovers GPUs (NVML, else
// private emulated GPUs), calibrates each with sluice-spin, runs one TokenServer per GPU and the
// node's registration socket, supervises instance processes (InstanceSupervisor) and serves the
// agent API and /metrics over runtime/http.
// Loops: the token servers' periods and the registration socket run on a LoopEnv (the
// token-server clock must not wait behind HTTP work, and RegistrationServer needs LoopEnv's fd
// watches); the HTTP API, the probes and the supervisor's tick run on the http::EventLoop.
// Thread safety: Start/Stop/the destructor from one owner thread (not a loop thread); the
// accessors may be called from any thread.
#ifndef SLUICE_RUNTIME_AGENT_AGENT_DAEMON_H_
#define SLUICE_RUNTIME_AGENT_AGENT_DAEMON_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "runtime/agent/gpu_discovery.h"
#include "runtime/agent/token_server.h"

namespace sluice::runtime {

struct AgentOptions {
  std::string host = "127.0.0.1";
  int port = 7072;  // 0: an ephemeral port (see port())
  std::string node_name = "node-0";
  std::string device = "auto";  // auto | emulated | cuda
  int emulated_gpus = 2;
  int emulated_sm_count = 108;
  int64_t emulated_memory_mb = 40960;
  std::pair<int, int> instance_ports = {7100, 7999};  // inclusive
  absl::Duration period = absl::Milliseconds(5);      // token-server period
  std::string gpu_controller = "dilu";                // see MakeGpuController
  std::string run_dir;  // required; created: token.sock and logs/<function>-<id>.log
  // Empty = located: env SLUICE_INTERCEPT_LIB / SLUICE_EMULATED_DIR / SLUICE_SPIN /
  // SLUICE_BIN_DIR, then this build tree, then next to the executable.
  std::string intercept_lib, emulated_dir, spin_path, bin_dir;
  absl::Duration health_interval = absl::Milliseconds(100);
  absl::Duration start_timeout = absl::Seconds(60);
  // The node's parameter store (docs/parameter-store.md): capacity (0 disables it), LRU
  // eviction past params_evict_threshold x capacity, and the TCP port multicast chains deliver
  // to (0: ephemeral; GET /agent/v1/params reports it).
  int64_t params_capacity_bytes = int64_t{8} << 30;
  double params_evict_threshold = 0.85;
  int params_port = 0;
  // The store's arena: when its pages are touched (start | background | none: on first use,
  // kept warm after), huge pages; and the cluster's shared chain token (empty: env
  // SLUICE_PARAMS_TOKEN, else none). See AgentParamsConfig.
  std::string params_pretouch = "none";
  bool params_huge_pages = false;
  std::string params_token;
  // Joining a cluster (issue 12, runtime/agent/node_join.h): the store URI (etcd://HOST:PORT,
  // sqlite:PATH; empty: no registration, the controller lists this agent itself), the lease
  // ttl (>= 1 s; renewed every ttl/3) and the "host:port" the controller reaches this agent at
  // (empty: host:port).
  std::string join;
  absl::Duration node_ttl = absl::Seconds(3);
  std::string advertise;
  // Fast cold starts (docs/platform.md "Cold starts"): pre-started runtime processes kept per
  // GPU for each runtime (instance command) started here (0: no pool; at most 16); the
  // supervisor's check cadence while an instance starts; and host-cache parameters: an
  // instance whose model_path is a regular file gets it from the parameter store when the
  // store holds it, and the agent loads it there in the background otherwise.
  int pool_per_gpu = 2;
  absl::Duration starting_probe_interval = absl::Milliseconds(10);
  bool host_cache_models = true;
};

// One GPU as the agent serves it.
struct AgentGpu {
  GpuInfo info;           // uuid as the driver reports it
  std::string emu_uuid;   // SLUICE_EMU_UUID (emulated only)
  int64_t blocks_per_s = 0;       // calibrated capacity at 100 us blocks
  int64_t tokens_per_period = 0;  // the token server's max_tokens
};

class AgentDaemon {
 public:
  // InvalidArgument naming a bad option; FailedPrecondition for device "cuda" without an NVIDIA
  // GPU; NotFound for a missing program (sluice-spin, libsluice_cuda.so, the emulated driver);
  // Unavailable when the port cannot be bound. Blocks for the calibration (about 1 s).
  static absl::StatusOr<std::unique_ptr<AgentDaemon>> Start(const AgentOptions& options);
  // Stop()s.
  ~AgentDaemon();

  int port() const;
  // Drains nothing: stops serving, kills every instance (SIGTERM, SIGKILL after 2 s), stops the
  // token servers and removes the emulated device segments. Idempotent.
  void Stop();

  const std::string& device() const;  // "emulated" or "cuda"
  std::vector<AgentGpu> gpus() const;
  // The token server of GPU `uuid`, or nullptr (valid until Stop()).
  const TokenServer* token_server(const std::string& uuid) const;

  struct Impl;

 private:
  explicit AgentDaemon(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_AGENT_AGENT_DAEMON_H_
