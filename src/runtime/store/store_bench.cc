// Control-plane figures of the store backends (issue 12, item 8; docs/PERFORMANCE.md):
//   BM_PlacementDecision/<backend>: one placement decision = GetVersioned of the function's
//     placement record + PutIf on its version (the controller's compare-and-put), in sequence.
//   BM_WatchPropagation/<backend>: a Put on one handle until a watch on another handle (another
//     connection, as another daemon would hold) returns it from Poll; manual time per change.
// Backends: memory (reference), sqlite (a temp file, WAL, default synchronous), etcd (a real
// etcd started by the benchmark; skipped when /usr/bin/etcd is absent).
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"

#include "runtime/store/etcd_store.h"
#include "runtime/store/memory_store.h"
#include "runtime/store/sqlite_store.h"
#include "runtime/store/testing/etcd_fixture.h"

namespace sluice::runtime {
namespace {

enum Backend { kMemory, kSqlite, kEtcd };

// Two handles on one store (the second is the first for memory), kept for the whole run.
struct Stores {
  std::unique_ptr<Store> writer;
  std::unique_ptr<Store> reader;
  Store& watcher() { return reader != nullptr ? *reader : *writer; }
};

std::string MakeTempDir() {
  std::string tmpl = "/tmp/sluice_store_bench_XXXXXX";
  return mkdtemp(tmpl.data()) != nullptr ? tmpl : "/tmp";
}

absl::StatusOr<Stores> Open(Backend backend) {
  Stores out;
  if (backend == kMemory) {
    out.writer = std::make_unique<MemoryStore>();
    return out;
  }
  if (backend == kSqlite) {
    static const std::string dir = MakeTempDir();
    static int n = 0;
    const std::string path = absl::StrCat(dir, "/bench", ++n, ".db");
    auto a = SqliteStore::Open(path);
    if (!a.ok())
      return a.status();
    auto b = SqliteStore::Open(path);
    if (!b.ok())
      return b.status();
    out.writer = std::move(*a);
    out.reader = std::move(*b);
    return out;
  }
  // A static object, so that etcd is killed when the benchmark exits.
  static absl::StatusOr<std::unique_ptr<EtcdProcess>> etcd = EtcdProcess::Start();
  if (!etcd.ok())
    return etcd.status();
  auto a = EtcdStore::Open((*etcd)->endpoint());
  if (!a.ok())
    return a.status();
  auto b = EtcdStore::Open((*etcd)->endpoint());
  if (!b.ok())
    return b.status();
  out.writer = std::move(*a);
  out.reader = std::move(*b);
  return out;
}

bool Skip(benchmark::State& state, Backend backend) {
  if (backend == kEtcd && !EtcdProcess::Missing().empty()) {
    state.SkipWithError(EtcdProcess::Missing().c_str());
    return true;
  }
  return false;
}

void BM_PlacementDecision(benchmark::State& state) {
  const auto backend = static_cast<Backend>(state.range(0));
  if (Skip(state, backend))
    return;
  absl::StatusOr<Stores> stores = Open(backend);
  if (!stores.ok()) {
    state.SkipWithError(std::string(stores.status().message()).c_str());
    return;
  }
  Store& s = *stores->writer;
  const std::string key = "placements/fn-bench";
  const std::string value(200, 'p');  // a placement record's size
  for (auto _ : state) {
    absl::StatusOr<std::optional<VersionedValue>> current = s.GetVersioned(key);
    const int64_t version = current.ok() && current->has_value() ? (*current)->version : 0;
    absl::StatusOr<int64_t> put = s.PutIf(key, version, value);
    if (!put.ok()) {
      state.SkipWithError(std::string(put.status().message()).c_str());
      return;
    }
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_WatchPropagation(benchmark::State& state) {
  const auto backend = static_cast<Backend>(state.range(0));
  if (Skip(state, backend))
    return;
  absl::StatusOr<Stores> stores = Open(backend);
  if (!stores.ok()) {
    state.SkipWithError(std::string(stores.status().message()).c_str());
    return;
  }
  Store& writer = *stores->writer;
  absl::StatusOr<int64_t> revision = stores->watcher().Revision();
  auto watch = stores->watcher().WatchPrefix("routes/", revision.ok() ? *revision : 0);
  if (!watch.ok()) {
    state.SkipWithError(std::string(watch.status().message()).c_str());
    return;
  }
  int64_t i = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    if (!writer.Put("routes/fn", absl::StrCat(++i)).ok()) {
      state.SkipWithError("put failed");
      return;
    }
    for (bool seen = false; !seen;) {
      absl::StatusOr<std::vector<WatchEvent>> events = (*watch)->Poll();
      if (!events.ok()) {
        state.SkipWithError(std::string(events.status().message()).c_str());
        return;
      }
      seen = !events->empty();
      if (!seen)
        std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
    state.SetIterationTime(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
}

void Backends(benchmark::internal::Benchmark* b) {
  b->ArgName("backend")->Arg(kMemory)->Arg(kSqlite)->Arg(kEtcd);
}

BENCHMARK(BM_PlacementDecision)->Apply(Backends)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_WatchPropagation)->Apply(Backends)->UseManualTime()->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace sluice::runtime
