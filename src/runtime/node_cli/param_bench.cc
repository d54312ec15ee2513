// Each figure is the median of `repeat` runs; memcpy is the best of 3 on one thread (the copy a
// single loader or receiver thread can do). Everything runs on this machine's loopback, so TCP
// copies share the CPU with the receivers (docs/parameter-store.md says what that costs). Every
// store's arena is touched before anything is timed (--pretouch start), so receives write into
// warm pages.
#include "runtime/node_cli/param_bench.h"

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

// Median seconds of `repeat` chain transfers to `agents`, evicting between runs.
absl::StatusOr<double> TimeChain(const ParamLease& lease, std::vector<BenchAgent>& agents,
                                 const ChainOptions& co, int repeat,
                                 std::vector<std::string>& failed) {
  std::vector<std::string> chain;
  for (BenchAgent& a : agents) chain.push_back(a.receiver->address());
  std::vector<double> runs;
  for (int i = 0; i < repeat; ++i) {
    SLUICE_ASSIGN_OR_RETURN(ChainReport r, SendChain(lease, chain, co));
    runs.push_back(absl::ToDoubleSeconds(r.elapsed));
    failed.insert(failed.end(), r.failed.begin(), r.failed.end());
    for (BenchAgent& a : agents) (void)a.store->Evict(lease.model());
  }
  return Median(runs);
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
  SLUICE_ASSIGN_OR_RETURN(r.one_transfer_s, TimeChain(*lease, one, co, o.repeat, r.failed));
  agents[0] = std::move(one[0]);
  SLUICE_ASSIGN_OR_RETURN(r.chain_s, TimeChain(*lease, agents, co, o.repeat, r.failed));
  r.ratio = r.one_transfer_s > 0 ? r.chain_s / r.one_transfer_s : 0;
  for (BenchAgent& a : agents) a.receiver->Stop();
  return r;
}

}  // namespace sluice::runtime
