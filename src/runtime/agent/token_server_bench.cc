// Token-server cost per GPU. BM_Period: one period (N busy instances, Dilu's controller) driven
// by ManualEnv; cpu_percent = its cost as a share of one core at a 5 ms period.
// BM_PeriodTimeQuota: the same with every instance under a time quota (q = 0.3 / 0.7
// alternating) and a window of W periods (second argument): the slice accounting's cost.
// BM_RealTime: a real LoopEnv server with 8 registered slots whose counters a client thread
// bumps, run for ~3 s; cpu_percent = the loop thread's getrusage(RUSAGE_THREAD) CPU time over
// the wall time (the figure the < 2 % target is about).
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "benchmark/benchmark.h"
#include "common/sim_env.h"
#include "runtime/agent/agent_client.h"
#include "runtime/agent/controller_factory.h"
#include "runtime/agent/token_server.h"
#include "runtime/common/loop_env.h"

namespace sluice::runtime {
namespace {

constexpr absl::Duration kPeriod = absl::Milliseconds(5);

// `window` = 0: no time quotas; else every instance gets one, with a window of that many periods.
std::unique_ptr<TokenServer> MakeServer(common::Env& env, int instances, int window = 0) {
  static int counter = 0;
  TokenServerConfig c;
  c.gpu_uuid = absl::StrCat("GPU-bench-", getpid(), "-", ++counter);
  c.period = kPeriod;
  c.max_tokens = 100000;
  c.time_window_periods = std::max(1, window);
  auto server = *TokenServer::Create(env, c, *MakeGpuController("dilu", kPeriod));
  for (int i = 0; i < instances; ++i) {
    InstanceSpec spec;
    spec.quota = {0.1, 0.5, window > 0 ? (i % 2 == 0 ? 0.3 : 0.7) : 1.0};
    spec.slo_sensitive = i % 2 == 0;
    (void)server->SetInstanceSpec(common::InstanceId(i), spec);
    (void)server->Admit(PeerCred{getpid(), getuid(), getgid()}, MakeHello(c.gpu_uuid, i, -1));
  }
  return server;
}

double ThreadCpuSeconds() {
  rusage u;
  getrusage(RUSAGE_THREAD, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

void RunPeriods(benchmark::State& state, int window) {
  common::ManualEnv env;
  auto server = MakeServer(env, static_cast<int>(state.range(0)), window);
  server->Start();
  int64_t k = 0;
  const double cpu0 = ThreadCpuSeconds();
  for (auto _ : state) {
    for (uint32_t i = 0; i < state.range(0); ++i) {
      Shared(server->segment().slot(i).blocks_total).fetch_add(100 + (k % 7) * (i + 1));
    }
    env.Advance(kPeriod);
    ++k;
  }
  const double per_period = (ThreadCpuSeconds() - cpu0) / static_cast<double>(state.iterations());
  state.counters["cpu_percent"] = 100.0 * per_period / absl::ToDoubleSeconds(kPeriod);
}

void BM_Period(benchmark::State& state) { RunPeriods(state, 0); }
BENCHMARK(BM_Period)->Arg(1)->Arg(8)->Arg(32);

void BM_PeriodTimeQuota(benchmark::State& state) {
  RunPeriods(state, static_cast<int>(state.range(1)));
}
BENCHMARK(BM_PeriodTimeQuota)->Args({1, 1})->Args({8, 1})->Args({32, 1})->Args({8, 20})
    ->Args({32, 20});

void BM_RealTime(benchmark::State& state) {
  auto loop = *LoopEnv::Create();
  auto server = MakeServer(*loop, 8);
  for (auto _ : state) {
    std::atomic<bool> stop{false};
    std::thread client([&] {  // 8 busy instances: counters move every ~1 ms
      while (!stop) {
        for (uint32_t i = 0; i < 8; ++i) Shared(server->segment().slot(i).blocks_total).fetch_add(50);
        usleep(1000);
      }
    });
    double cpu0 = 0, cpu1 = 0;
    absl::Time t0, t1;
    loop->RunSync([&] { cpu0 = ThreadCpuSeconds(); t0 = loop->Now(); server->Start(); });
    usleep(3000000);
    loop->RunSync([&] { server->Stop(); cpu1 = ThreadCpuSeconds(); t1 = loop->Now(); });
    stop = true;
    client.join();
    state.counters["cpu_percent"] = 100.0 * (cpu1 - cpu0) / absl::ToDoubleSeconds(t1 - t0);
    state.counters["periods"] = static_cast<double>(server->periods_run());
  }
  loop->Stop();
}
BENCHMARK(BM_RealTime)->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();

}  // namespace
}  // namespace sluice::runtime
