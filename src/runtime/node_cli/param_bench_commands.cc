// `sluice node multicast-bench` and `sluice node cache-bench` (param_bench.h): flags, and one
// JSON object (--json) or a short table. Registered by RegisterNode (node_commands.cc).
#include <cstdio>
#include <memory>

#include "CLI/CLI.hpp"
#include "nlohmann/json.hpp"
#include "runtime/node_cli/param_bench.h"

namespace sluice::cli {
namespace {

int Fail(const char* cmd, const absl::Status& s) {
  std::fprintf(stderr, "sluice node %s: %s\n", cmd, s.ToString().c_str());
  return absl::IsInvalidArgument(s) ? 2 : 1;
}

int RunMulticast(const runtime::MulticastBenchOptions& o, bool json) {
  absl::StatusOr<runtime::MulticastBenchResult> r = runtime::RunMulticastBench(o);
  if (!r.ok()) return Fail("multicast-bench", r.status());
  nlohmann::json j = {{"one_transfer_s", r->one_transfer_s}, {"chain_s", r->chain_s},
                      {"ratio", r->ratio},                   {"load_gib_per_s", r->load_gib_per_s},
                      {"memcpy_gib_per_s", r->memcpy_gib_per_s},
                      {"memcpy_fresh_gib_per_s", r->memcpy_fresh_gib_per_s},
                      {"arena_pretouch_s", r->arena_pretouch_s},
                      {"huge_pages", r->huge_pages},
                      {"receivers", o.receivers},            {"bytes", r->bytes},
                      {"chunk_bytes", o.chunk_bytes},        {"failed", r->failed},
                      {"one_transfer_cpu_s", r->one_transfer_cpu_s},
                      {"chain_cpu_s", r->chain_cpu_s},
                      {"one_transfer_switches", r->one_transfer_switches},
                      {"chain_switches", r->chain_switches},
                      {"cpus", r->cpus},
                      {"cpu_floor_ratio", r->cpu_floor_ratio}};
  if (json) {
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("one transfer %.3f s, chain of %d %.3f s, ratio %.2f; load %.2f GiB/s, memcpy "
                "%.2f GiB/s\n",
                r->one_transfer_s, o.receivers, r->chain_s, r->ratio, r->load_gib_per_s,
                r->memcpy_gib_per_s);
  }
  return r->failed.empty() ? 0 : 1;
}

int RunCache(const runtime::CacheBenchOptions& o, bool json) {
  absl::StatusOr<runtime::CacheBenchResult> r = runtime::RunCacheBench(o);
  if (!r.ok()) return Fail("cache-bench", r.status());
  nlohmann::json j = {{"load_gib_per_s", r->load_gib_per_s},
                      {"memcpy_gib_per_s", r->memcpy_gib_per_s},
                      {"ratio", r->ratio},
                      {"cold_start_ms_from_cache", r->cold_start_ms_from_cache},
                      {"cold_start_ms_from_disk", r->cold_start_ms_from_disk},
                      {"cold_start_ms_from_disk_prestarted",
                       r->cold_start_ms_from_disk_prestarted},
                      {"cold_start_speedup", r->cold_start_ms_from_cache > 0
                                                 ? r->cold_start_ms_from_disk /
                                                       r->cold_start_ms_from_cache
                                                 : 0},
                      {"load_with_attach_gib_per_s", r->load_with_attach_gib_per_s},
                      {"memcpy_fresh_gib_per_s", r->memcpy_fresh_gib_per_s},
                      {"store_fill_gib_per_s", r->store_fill_gib_per_s},
                      {"arena_pretouch_s", r->arena_pretouch_s},
                      {"cold_start_ms_from_cache_spawned", r->cold_start_ms_from_cache_spawned},
                      {"cold_start_ms_from_disk_spawned", r->cold_start_ms_from_disk_spawned},
                      {"spawn_ms", r->spawn_ms},
                      {"device_setup_ms", r->device_setup_ms},
                      {"disk_path", r->disk_path},
                      {"device", r->device},
                      {"device_note", r->device_note},
                      {"huge_pages", r->huge_pages},
                      {"huge_pages_note", r->huge_pages_note},
                      {"attach_ms_memfd_scm", r->attach_ms_memfd_scm},
                      {"attach_ms_shm_open", r->attach_ms_shm_open},
                      {"attach_ms_fork_cow", r->attach_ms_fork_cow},
                      {"bytes", r->bytes}};
  std::printf("%s\n", json ? j.dump().c_str() : j.dump(2).c_str());
  return 0;
}

// --pretouch start|background|none and --huge-pages, for the stores' arenas.
void AddArenaFlags(CLI::App& app, runtime::Pretouch& pretouch, bool& huge) {
  app.add_option_function<std::string>(
         "--pretouch",
         [&pretouch](const std::string& v) {
           absl::StatusOr<runtime::Pretouch> p = runtime::ParsePretouch(v, "--pretouch");
           if (!p.ok()) throw CLI::ValidationError(std::string(p.status().message()));
           pretouch = *p;
         },
         "when the store's arena is touched: start | background | none (default start)");
  app.add_flag("--huge-pages", huge, "arena chunks in huge pages (needs vm.nr_hugepages)");
}

}  // namespace

void RegisterParamBenches(CLI::App& node, int& exit_code) {
  auto mo = std::make_shared<runtime::MulticastBenchOptions>();
  auto mjson = std::make_shared<bool>(false);
  CLI::App* m = node.add_subcommand(
      "multicast-bench", "time one parameter transfer vs a chain over loopback TCP, the store's "
                         "disk load and memcpy");
  m->add_option("--receivers", mo->receivers, "chain members (1-16)")->capture_default_str();
  m->add_option("--size-gib", mo->size_gib, "model size in GiB")->capture_default_str();
  m->add_option("--chunk-mib", [mo](const CLI::results_t& v) {
    mo->chunk_bytes = std::stoll(v[0]) << 20;
    return true;
  }, "chunk size in MiB (default 4)");
  m->add_option("--repeat", mo->repeat, "runs per figure (median)")->capture_default_str();
  m->add_option("--dir", mo->dir, "where the model file is written")->capture_default_str();
  AddArenaFlags(*m, mo->pretouch, mo->huge_pages);
  m->add_flag("--json", *mjson, "print one JSON object");
  m->callback([mo, mjson, &exit_code] { exit_code = RunMulticast(*mo, *mjson); });

  auto co = std::make_shared<runtime::CacheBenchOptions>();
  auto cjson = std::make_shared<bool>(false);
  CLI::App* c = node.add_subcommand(
      "cache-bench", "time the store's disk load vs memcpy, and a cold start mapping the store "
                     "vs reading from disk");
  c->add_option("--size-gib", co->size_gib, "model size in GiB")->capture_default_str();
  c->add_option("--repeat", co->repeat, "runs per figure (median)")->capture_default_str();
  c->add_option("--dir", co->dir, "where the model file is written")->capture_default_str();
  c->add_option("--load-threads", co->load_threads, "loader threads")->capture_default_str();
  c->add_option("--device", co->device, "auto | emulated | none")->capture_default_str();
  c->add_flag("!--no-attach-comparison", co->attach_comparison,
              "skip the /dev/shm and fork attach timings");
  AddArenaFlags(*c, co->pretouch, co->huge_pages);
  c->add_flag("--json", *cjson, "print one JSON object");
  c->callback([co, cjson, &exit_code] { exit_code = RunCache(*co, *cjson); });
}

}  // namespace sluice::cli
