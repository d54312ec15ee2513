// Each figure is the median of `repeat` runs; memcpy is the best of 3 on one thread (the copy a
// single loader or receiver thread can do). Everything runs on this machine's loopback, so TCP
// copies share the CPU with the receivers (docs/parameter-store.md says what that costs). Every
// store's arena is touched before anything is timed (--pretouch start), so receives write into
// warm pages.
#include "runtime/node_cli/param_bench.h"

#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>

#include "common/status.h"
#include "runtime/node_cli/bench_util.h"
#include "runtime/paramstore/chain_receiver.h"
#include "runtime/paramstore/file_loader.h"

namespace sluice::runtime {
namespace {

struct BenchAgent {
  std::unique_ptr<ParamStore> store;
  std::unique_ptr<ChainReceiver> receiver;
};

// Process CPU seconds (user + system) and context switches so far.
struct CpuUse {
  double cpu_s = 0;
  double switches = 0;
  static CpuUse Now() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec * 1e-6; };
    return {s(u.ru_utime) + s(u.ru_stime), static_cast<double>(u.ru_nvcsw + u.ru_nivcsw)};
  }
};

struct ChainTiming {
  double seconds = 0, cpu_s = 0, switches = 0;  // medians over the runs
};

// `repeat` chain transfers to `agents`, evicting between runs.
absl::StatusOr<ChainTiming> TimeChain(const ParamLease& lease, std::vector<BenchAgent>& agents,
                                      const ChainOptions& co, int repeat,
                                      std::vector<std::string>& failed) {
  std::vector<std::string> chain;
  for (BenchAgent& a : agents) chain.push_back(a.receiver->address());
  std::vector<double> runs, cpu, switches;
  for (int i = 0; i < repeat; ++i) {
    const CpuUse before = CpuUse::Now();
    SLUICE_ASSIGN_OR_RETURN(ChainReport r, SendChain(lease, chain, co));
    const CpuUse after = CpuUse::Now();
    runs.push_back(absl::ToDoubleSeconds(r.elapsed));
    cpu.push_back(after.cpu_s - before.cpu_s);
    switches.push_back(after.switches - before.switches);
    failed.insert(failed.end(), r.failed.begin(), r.failed.end());
    for (BenchAgent& a : agents) (void)a.store->Evict(lease.model());
  }
  return ChainTiming{Median(runs), Median(cpu), Median(switches)};
}

int UsableCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
  return std::max(1, CPU_COUNT(&set));
}

}  // namespace

absl::StatusOr<MulticastBenchResult> RunMulticastBench(const MulticastBenchOptions& o) {
  SLUICE_RETURN_IF_ERROR(ValidateSize(o.size_gib));
  if (o.receivers < 1 || o.receivers > 16) {
    return absl::InvalidArgumentError("--receivers must be in [1, 16]");
  }
  if (o.repeat < 1) return absl::InvalidArgumentError("--repeat must be >= 1");
  MulticastBenchResult r;
  r.bytes = static_cast<int64_t>(o.size_gib * kGiB);
  SLUICE_ASSIGN_OR_RETURN(r.memcpy_gib_per_s, MemcpyGiBps(r.bytes));
  SLUICE_ASSIGN_OR_RETURN(r.memcpy_fresh_gib_per_s, FreshMemcpyGiBps(r.bytes));
  SLUICE_ASSIGN_OR_RETURN(std::string path, WriteModelFile(o.dir, r.bytes));
  double pretouch_s = 0;
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<ParamStore> origin,
                          BenchStore(r.bytes, o.pretouch, o.huge_pages, pretouch_s));
  r.huge_pages = origin->arena().huge_pages();
  LoadOptions lo;
  lo.threads = o.load_threads;
  absl::StatusOr<LoadResult> load = LoadFile(*origin, "bench-model", path, lo);
  unlink(path.c_str());
  if (!load.ok()) return load.status();
  r.load_gib_per_s = load->gib_per_s();
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<ParamLease> lease, origin->Acquire("bench-model"));
  ChainOptions co;
  co.chunk_bytes = o.chunk_bytes;
  std::vector<BenchAgent> agents;
  for (int i = 0; i < o.receivers; ++i) {
    BenchAgent a;
    SLUICE_ASSIGN_OR_RETURN(a.store, BenchStore(r.bytes, o.pretouch, o.huge_pages, pretouch_s));
    r.arena_pretouch_s = std::max(r.arena_pretouch_s, pretouch_s);
    ChainReceiverOptions ro;
    ro.chain = co;
    SLUICE_ASSIGN_OR_RETURN(a.receiver, ChainReceiver::Start(*a.store, ro));
    agents.push_back(std::move(a));
  }
  std::vector<BenchAgent> one;
  one.push_back(std::move(agents[0]));
  SLUICE_ASSIGN_OR_RETURN(ChainTiming t1, TimeChain(*lease, one, co, o.repeat, r.failed));
  agents[0] = std::move(one[0]);
  SLUICE_ASSIGN_OR_RETURN(ChainTiming tn, TimeChain(*lease, agents, co, o.repeat, r.failed));
  r.one_transfer_s = t1.seconds;
  r.chain_s = tn.seconds;
  r.ratio = r.one_transfer_s > 0 ? r.chain_s / r.one_transfer_s : 0;
  r.one_transfer_cpu_s = t1.cpu_s;
  r.chain_cpu_s = tn.cpu_s;
  r.one_transfer_switches = t1.switches;
  r.chain_switches = tn.switches;
  r.cpus = UsableCpus();
  r.cpu_floor_ratio = r.one_transfer_s > 0 ? tn.cpu_s / r.cpus / r.one_transfer_s : 0;
  for (BenchAgent& a : agents) a.receiver->Stop();
  return r;
}

}  // namespace sluice::runtime
