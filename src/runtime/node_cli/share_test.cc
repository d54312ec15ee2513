// RunShareTest: locate the programs, pick and probe the device, measure its throughput with one
// unthrottled sluice-spin, then run the token server and one throttled sluice-spin per limit
// over a common CLOCK_MONOTONIC window and compare their block counts with what the limits and
// time quotas entitle them to.
#include "runtime/node_cli/share_test.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <memory>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "nlohmann/json.hpp"
#include "runtime/agent/controller_factory.h"
#include "runtime/agent/registration_server.h"
#include "runtime/agent/spin_calibration.h"
#include "runtime/agent/token_server.h"
#include "runtime/common/loop_env.h"
#include "runtime/common/subprocess.h"
#include "runtime/node_cli/worker_env.h"

namespace sluice::runtime {
namespace {

struct Server {
  std::unique_ptr<LoopEnv> loop;
  std::unique_ptr<TokenServer> tokens;
  std::unique_ptr<RegistrationServer> registration;
  ~Server() {
    registration.reset();
    if (tokens) tokens->Stop();
    if (loop) loop->Stop();  // no period in flight once the loop has stopped
  }
};

absl::Status StartServer(const ShareTestOptions& o, const std::string& uuid, int64_t max_tokens,
                         const std::string& socket_path, Server& s) {
  SLUICE_ASSIGN_OR_RETURN(s.loop, LoopEnv::Create());
  TokenServerConfig c;
  c.gpu_uuid = uuid;
  c.period = o.period;
  c.max_tokens = max_tokens;
  c.time_window_periods = o.time_window_periods;
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<core::VerticalController> ctl,
                          MakeGpuController(o.controller, o.period));
  SLUICE_ASSIGN_OR_RETURN(s.tokens, TokenServer::Create(*s.loop, c, std::move(ctl)));
  for (size_t i = 0; i < o.limits.size(); ++i) {
    InstanceSpec spec;
    spec.quota = {o.limits[i], o.limits[i], o.time_quotas.empty() ? 1.0 : o.time_quotas[i]};
    spec.slo_sensitive = false;
    SLUICE_RETURN_IF_ERROR(s.tokens->SetInstanceSpec(common::InstanceId(int64_t(i)), spec));
  }
  RegistrationOptions ro;
  ro.socket_path = socket_path;
  SLUICE_ASSIGN_OR_RETURN(s.registration, RegistrationServer::Create(*s.loop, ro));
  s.registration->AddGpu(*s.tokens);
  s.loop->RunSync([&s] { s.tokens->Start(); });
  return absl::OkStatus();
}

// Starts the workers, samples how many hold a slot mid-window, and collects their block counts.
absl::Status RunWorkers(const ShareTestOptions& o, const WorkerEnv& env, Server& s, int grid,
                        ShareTestResult& r) {
  const absl::Time from = s.loop->Now() + o.warmup;
  const absl::Time until = from + o.duration;
  std::vector<std::unique_ptr<Subprocess>> workers;
  for (size_t i = 0; i < o.limits.size(); ++i) {
    SLUICE_ASSIGN_OR_RETURN(
        std::unique_ptr<Subprocess> p,
        env.Spawn({"--grid", std::to_string(grid), "--block-ns", std::to_string(o.block_ns),
                   "--batch", std::to_string(kSpinBatch), "--from-ns",
                   std::to_string(ToMonotonicNanos(from)), "--until-ns",
                   std::to_string(ToMonotonicNanos(until))},
                  /*preload=*/true, int64_t(i)));
    workers.push_back(std::move(p));
  }
  std::atomic<int> registered{0};
  s.loop->RunAt(from + o.duration / 2, [&s, &registered] {
    int n = 0;
    for (const SlotView& v : s.tokens->Slots()) n += v.state == SLUICE_SLOT_ACTIVE;
    registered = n;
  });
  const absl::Duration timeout = o.warmup + o.duration + absl::Seconds(30);
  for (auto& w : workers) {
    SLUICE_ASSIGN_OR_RETURN(nlohmann::json res, ReadSpinEvent(*w, "result", timeout));
    if (res.value("late_start", false)) {
      return absl::DeadlineExceededError("a worker started after the window opened; retry "
                                         "with a longer warm-up");
    }
    r.blocks.push_back(res.value("blocks", int64_t{0}));
  }
  for (auto& w : workers) (void)w->Wait();
  r.registered = registered;
  return absl::OkStatus();
}

}  // namespace

std::vector<double> Shares(const std::vector<double>& values) {
  double sum = 0;
  for (double v : values) sum += v;
  std::vector<double> out(values.size(), 0.0);
  for (size_t i = 0; i < values.size() && sum > 0; ++i) out[i] = values[i] / sum;
  return out;
}

std::vector<double> ExpectedTimeShares(const std::vector<double>& limits,
                                       const std::vector<double>& time_quotas) {
  double sum = 0;
  for (double l : limits) sum += l;
  std::vector<double> e;
  for (size_t i = 0; i < limits.size(); ++i) {
    e.push_back(limits[i] / std::max(1.0, sum) * (time_quotas.empty() ? 1.0 : time_quotas[i]));
  }
  return e;
}

namespace {

double MaxAbsError(const std::vector<double>& a, const std::vector<double>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

// Fills the expected and measured shares of `r` from its block counts.
void Score(const ShareTestOptions& o, ShareTestResult& r) {
  const std::vector<double> e = ExpectedTimeShares(o.limits, o.time_quotas);
  r.expected = Shares(e);
  std::vector<double> blocks(r.blocks.begin(), r.blocks.end());
  r.measured = Shares(blocks);
  const double capacity = static_cast<double>(r.capacity_blocks_per_s);
  const double budgeted =
      capacity > 0 ? r.max_tokens / (capacity * absl::ToDoubleSeconds(o.period)) : 0;
  for (size_t i = 0; i < e.size(); ++i) {
    r.expected_time_share.push_back(e[i] * budgeted);
    r.measured_time_share.push_back(
        capacity > 0 ? blocks[i] / (capacity * absl::ToDoubleSeconds(o.duration)) : 0);
  }
  r.max_abs_error = MaxAbsError(r.expected, r.measured);
  r.max_abs_time_error = MaxAbsError(r.expected_time_share, r.measured_time_share);
}

}  // namespace

absl::StatusOr<ShareTestResult> RunShareTest(const ShareTestOptions& o) {
  SLUICE_RETURN_IF_ERROR(ValidateShareTestOptions(o));
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<WorkerEnv> worker_env, WorkerEnv::Create(o));
  WorkerEnv& env = *worker_env;
  ShareTestResult r;
  r.device = env.device();
  auto spawn = [&env](std::vector<std::string> args) { return env.Spawn(std::move(args), false); };
  SLUICE_ASSIGN_OR_RETURN(nlohmann::json probe, ProbeSpin(spawn));
  r.device_name = probe.value("name", std::string());
  r.gpu_uuid = probe.value("uuid", std::string());
  r.sm_count = probe.value("sm_count", 0);
  if (r.gpu_uuid.empty() || r.sm_count <= 0) return absl::InternalError("bad device probe");
  env.set_gpu_uuid(r.gpu_uuid);
  SLUICE_ASSIGN_OR_RETURN(r.capacity_blocks_per_s,
                          CalibrateBlocksPerSecond(spawn, r.sm_count, o.block_ns));
  r.max_tokens = TokensPerPeriod(r.capacity_blocks_per_s, o.period, o.headroom);
  Server server;
  SLUICE_RETURN_IF_ERROR(StartServer(o, r.gpu_uuid, r.max_tokens, env.socket_path(), server));
  SLUICE_RETURN_IF_ERROR(RunWorkers(o, env, server, r.sm_count, r));
  Score(o, r);
  return r;
}

}  // namespace sluice::runtime
