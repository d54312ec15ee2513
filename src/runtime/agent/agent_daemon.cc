// AgentDaemon startup and shutdown: options, program discovery, GPUs (NVML or emulated), one
// calibration per GPU (in parallel: each GPU is its own device), token servers, the registration
// socket, then the supervisor and the HTTP server on the daemon's EventLoop.
#include "runtime/agent/agent_daemon.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "runtime/agent/agent_api.h"
#include "runtime/agent/controller_factory.h"
#include "runtime/agent/instance_record.h"
#include "runtime/agent/spin_calibration.h"
#include "runtime/common/program_path.h"

namespace sluice::runtime {
namespace {

constexpr int64_t kCalibrationBlockNs = 100000;  // 100 us blocks
constexpr double kHeadroom = 0.05;               // as share-test: never queue a whole period

absl::Status Validate(const AgentOptions& o) {
  if (o.device != "auto" && o.device != "emulated" && o.device != "cuda") {
    return absl::InvalidArgumentError(
        absl::StrCat("device must be auto, emulated or cuda, got '", o.device, "'"));
  }
  if (o.run_dir.empty()) return absl::InvalidArgumentError("run_dir is required");
  if (o.port < 0 || o.port > 65535) return absl::InvalidArgumentError("port out of range");
  const auto [lo, hi] = o.instance_ports;
  if (lo < 1 || hi > 65535 || lo > hi) {
    return absl::InvalidArgumentError("instance_ports must be a range within [1, 65535]");
  }
  if (o.emulated_gpus < 1 || o.emulated_gpus > 64) {
    return absl::InvalidArgumentError("emulated_gpus must be in [1, 64]");
  }
  if (o.emulated_sm_count < 1 || o.emulated_memory_mb < 1) {
    return absl::InvalidArgumentError("emulated_sm_count and emulated_memory_mb must be >= 1");
  }
  if (o.health_interval <= absl::ZeroDuration() || o.start_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("health_interval and start_timeout must be > 0");
  }
  if (o.pool_per_gpu < 0 || o.pool_per_gpu > 16) {
    return absl::InvalidArgumentError(
        absl::StrCat("pool_per_gpu must be in [0, 16], got ", o.pool_per_gpu));
  }
  if (o.starting_probe_interval <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("starting_probe_interval must be > 0");
  }
  return absl::OkStatus();
}

AgentParamsConfig ParamsConfigOf(const AgentOptions& o) {
  return {o.params_capacity_bytes, o.params_evict_threshold, o.host,
          o.params_port,          o.run_dir + "/params.sock", o.params_pretouch,
          o.params_huge_pages,    o.params_token};
}

absl::Status LocatePrograms(AgentDaemon::Impl& d) {
  const AgentOptions& o = d.options;
  const std::string exe = ExecutableDir();
  d.spin_path = FindProgramPath(o.spin_path, "SLUICE_SPIN",
                                {SLUICE_BUILD_DIR "/bin/sluice-spin", exe + "/sluice-spin"});
  d.intercept_lib =
      FindProgramPath(o.intercept_lib, "SLUICE_INTERCEPT_LIB",
                      {SLUICE_BUILD_DIR "/src/intercept/libsluice_cuda.so",
                       exe + "/libsluice_cuda.so", exe + "/../lib/libsluice_cuda.so"});
  d.emulated_dir = FindProgramPath(o.emulated_dir, "SLUICE_EMULATED_DIR",
                                   {SLUICE_BUILD_DIR "/emulated", exe + "/../lib/sluice-emulated"});
  d.bin_dir = FindProgramPath(o.bin_dir, "SLUICE_BIN_DIR", {SLUICE_BUILD_DIR "/bin", exe});
  if (d.spin_path.empty()) {
    return absl::NotFoundError("sluice-spin not found (build it, or set SLUICE_SPIN)");
  }
  if (d.intercept_lib.empty()) {
    return absl::NotFoundError(
        "libsluice_cuda.so not found (build target sluice_intercept, or set SLUICE_INTERCEPT_LIB)");
  }
  return absl::OkStatus();
}

absl::Status DiscoverGpus(AgentDaemon::Impl& d) {
  const AgentOptions& o = d.options;
  if (o.device != "emulated") {
    absl::StatusOr<std::vector<GpuInfo>> real = DiscoverNvmlGpus();
    if (real.ok()) {
      d.device = "cuda";
      for (GpuInfo& g : *real) d.gpus.push_back(AgentGpu{std::move(g), "", 0, 0});
      return absl::OkStatus();
    }
    if (o.device == "cuda") {
      return absl::FailedPreconditionError(absl::StrCat(
          "device cuda: no NVIDIA GPU found through NVML (", real.status().message(),
          "); use device emulated or auto"));
    }
  }
  d.device = "emulated";
  if (d.emulated_dir.empty() || access((d.emulated_dir + "/libcuda.so.1").c_str(), F_OK) != 0) {
    return absl::NotFoundError(
        "emulated libcuda.so.1 not found (build sluice_intercept_emulated, or set "
        "SLUICE_EMULATED_DIR)");
  }
  for (GpuInfo& g : MakeEmulatedGpus(o.emulated_gpus, o.emulated_sm_count, o.emulated_memory_mb,
                                     ToMonotonicNanos(MonotonicNow()))) {
    const std::string emu = g.uuid;
    d.gpus.push_back(AgentGpu{std::move(g), emu, 0, 0});
  }
  return absl::OkStatus();
}

// sluice-spin on GPU `g` without the interception library; the first process on an emulated
// device creates its segment from SLUICE_EMU_SM_COUNT / SLUICE_EMU_MEMORY_MB.
SpawnOptions SpinOptions(const AgentDaemon::Impl& d, const AgentGpu& g,
                         std::vector<std::string> args) {
  SpawnOptions s;
  s.argv.push_back(d.spin_path);
  s.argv.insert(s.argv.end(), args.begin(), args.end());
  s.unset_env = {"LD_PRELOAD", "SLUICE_TOKEN_SOCKET", "SLUICE_INSTANCE_ID", "SLUICE_GPU_UUID"};
  if (g.info.emulated) {
    s.env = {{"LD_LIBRARY_PATH", d.emulated_dir},
             {"SLUICE_EMU_UUID", g.emu_uuid},
             {"SLUICE_EMU_SM_COUNT", std::to_string(d.options.emulated_sm_count)},
             {"SLUICE_EMU_MEMORY_MB", std::to_string(d.options.emulated_memory_mb)}};
  } else {
    s.env = {{"CUDA_VISIBLE_DEVICES", std::to_string(g.info.index)}};
    s.unset_env.push_back("SLUICE_EMU_UUID");
  }
  return s;
}

absl::Status Calibrate(const AgentDaemon::Impl& d, AgentGpu& g) {
  auto spawn = [&](std::vector<std::string> args) {
    return Subprocess::Spawn(SpinOptions(d, g, std::move(args)));
  };
  SLUICE_ASSIGN_OR_RETURN(nlohmann::json probe, ProbeSpin(spawn));
  const std::string uuid = probe.value("uuid", std::string());
  const int sm = probe.value("sm_count", 0);
  if (uuid.empty() || sm <= 0) return absl::InternalError("sluice-spin --probe: bad device");
  if (g.info.emulated) g.info.uuid = uuid;  // as the driver (and the intercept) reports it
  g.info.sm_count = sm;
  if (g.info.memory_bytes == 0) g.info.memory_bytes = probe.value("memory_bytes", int64_t{0});
  SLUICE_ASSIGN_OR_RETURN(g.blocks_per_s, CalibrateBlocksPerSecond(spawn, sm, kCalibrationBlockNs));
  g.tokens_per_period = TokensPerPeriod(g.blocks_per_s, d.options.period, kHeadroom);
  return absl::OkStatus();
}

absl::Status CalibrateAll(AgentDaemon::Impl& d) {
  std::vector<absl::Status> results(d.gpus.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < d.gpus.size(); ++i) {
    threads.emplace_back([&d, &results, i] { results[i] = Calibrate(d, d.gpus[i]); });
  }
  for (std::thread& t : threads) t.join();
  for (size_t i = 0; i < results.size(); ++i) {
    if (!results[i].ok()) {
      return absl::Status(results[i].code(), absl::StrCat("calibrating GPU ", i, " (",
                                                          d.gpus[i].emu_uuid, "): ",
                                                          results[i].message()));
    }
  }
  return absl::OkStatus();
}

absl::Status StartTokenServers(AgentDaemon::Impl& d) {
  SLUICE_ASSIGN_OR_RETURN(d.token_loop, LoopEnv::Create());
  for (const AgentGpu& g : d.gpus) {
    TokenServerConfig c;
    c.gpu_uuid = g.info.uuid;
    c.period = d.options.period;
    c.max_tokens = g.tokens_per_period;
    c.slot_count = SLUICE_MAX_SLOTS;
    SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<core::VerticalController> ctl,
                            MakeGpuController(d.options.gpu_controller, d.options.period));
    SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<TokenServer> ts,
                            TokenServer::Create(*d.token_loop, c, std::move(ctl)));
    d.token_servers.push_back(std::move(ts));
  }
  RegistrationOptions ro;
  ro.socket_path = d.socket_path();
  SLUICE_ASSIGN_OR_RETURN(d.registration, RegistrationServer::Create(*d.token_loop, ro));
  for (auto& ts : d.token_servers) d.registration->AddGpu(*ts);
  d.token_loop->RunSync([&d] {
    for (auto& ts : d.token_servers) ts->Start();
  });
  return absl::OkStatus();
}

absl::Status StartApi(AgentDaemon::Impl& d) {
  SLUICE_ASSIGN_OR_RETURN(d.loop, http::EventLoop::Create());
  d.client = std::make_unique<http::Client>(*d.loop);
  d.probe = std::make_unique<HttpProbe>(*d.client, std::max(d.options.health_interval,
                                                             absl::Milliseconds(500)));
  SupervisorOptions so;
  so.health_interval = d.options.health_interval;
  so.start_timeout = d.options.start_timeout;
  so.state_path = d.records_path();
  so.starting_interval = d.options.starting_probe_interval;
  d.supervisor = std::make_unique<InstanceSupervisor>(*d.loop, *d.probe, so);
  d.StartPool();
  http::ServerOptions ho;
  ho.host = d.options.host;
  ho.port = d.options.port;
  SLUICE_ASSIGN_OR_RETURN(d.server, http::Server::Start(*d.loop, ho, d.MakeRouter()));
  return absl::OkStatus();
}

}  // namespace

void AgentDaemon::Impl::Shutdown() {
  if (stopped) return;
  stopped = true;
  if (server) server->Stop();
  if (pool) pool->StopAll();
  if (supervisor) supervisor->StopAll();
  supervisor.reset();  // before the probe and client it borrows
  // A stopped agent leaves nothing to re-adopt: its instances and emulated devices are gone.
  std::error_code ec;
  std::filesystem::remove(records_path(), ec);
  std::filesystem::remove(emulated_gpus_path(), ec);
  if (loop) loop->Stop();
  join.reset();  // the node leaves the cluster now rather than when its lease runs out
  pool.reset();  // its tick ran on the loop
  params.reset();  // after the server: no handler can reach it
  probe.reset();
  client.reset();
  registration.reset();
  for (auto& ts : token_servers) ts->Stop();
  if (token_loop) token_loop->Stop();  // no period in flight once the loop has stopped
  token_servers.clear();               // unlinks the token segments
  for (const AgentGpu& g : gpus) {
    if (!g.emu_uuid.empty()) shm_unlink(EmulatedSegmentName(g.emu_uuid).c_str());
  }
}

absl::StatusOr<std::unique_ptr<AgentDaemon>> AgentDaemon::Start(const AgentOptions& options) {
  SLUICE_RETURN_IF_ERROR(Validate(options));
  auto d = std::make_unique<Impl>();
  d->options = options;
  d->next_port = options.instance_ports.first;
  std::error_code ec;
  std::filesystem::create_directories(options.run_dir + "/logs", ec);
  if (ec) {
    return absl::InvalidArgumentError(
        absl::StrCat("run_dir ", options.run_dir, ": cannot create: ", ec.message()));
  }
  SLUICE_RETURN_IF_ERROR(LocatePrograms(*d));
  SLUICE_RETURN_IF_ERROR(DiscoverGpus(*d));
  if (d->device == "emulated")
    d->KeepEmulatedGpus();
  std::unique_ptr<AgentDaemon> daemon(new AgentDaemon(std::move(d)));
  Impl& impl = *daemon->impl_;  // from here on, Stop() cleans up whatever started
  SLUICE_RETURN_IF_ERROR(CalibrateAll(impl));
  SLUICE_RETURN_IF_ERROR(StartTokenServers(impl));
  SLUICE_RETURN_IF_ERROR(impl.CreateMetrics());
  if (options.params_capacity_bytes > 0) {
    SLUICE_ASSIGN_OR_RETURN(impl.params, AgentParams::Start(ParamsConfigOf(options)));
  }
  const absl::StatusOr<std::vector<InstanceRecord>> records =
      ReadInstanceRecords(impl.records_path());  // before the supervisor rewrites the file
  SLUICE_RETURN_IF_ERROR(StartApi(impl));
  impl.AdoptInstances(records);
  if (!options.join.empty()) {  // issue 12: announce this node to the cluster's controllers
    const NodeRecord record{options.node_name,
                            options.advertise.empty()
                                ? absl::StrCat(options.host, ":", impl.server->port())
                                : options.advertise,
                            static_cast<int>(impl.gpus.size()), impl.device};
    SLUICE_ASSIGN_OR_RETURN(impl.join,
                            NodeJoin::Start(options.join, *impl.loop, record, options.node_ttl));
  }
  return daemon;
}

AgentDaemon::AgentDaemon(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
AgentDaemon::~AgentDaemon() { Stop(); }
void AgentDaemon::Stop() { impl_->Shutdown(); }
int AgentDaemon::port() const { return impl_->server ? impl_->server->port() : 0; }
const std::string& AgentDaemon::device() const { return impl_->device; }
std::vector<AgentGpu> AgentDaemon::gpus() const { return impl_->gpus; }

const TokenServer* AgentDaemon::token_server(const std::string& uuid) const {
  const int i = impl_->GpuIndex(uuid);
  if (i < 0 || static_cast<size_t>(i) >= impl_->token_servers.size()) return nullptr;
  return impl_->token_servers[static_cast<size_t>(i)].get();
}

}  // namespace sluice::runtime
