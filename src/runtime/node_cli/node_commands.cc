// `sluice node ...`: node-level commands. share-test runs RunShareTest and prints a table or
// the JSON object {"device", "expected", "measured", "max_abs_error", "time_quotas",
// "expected_time_share", "measured_time_share", "max_abs_time_error", ...}.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "nlohmann/json.hpp"
#include "runtime/node_cli/share_test.h"

namespace sluice::cli {
namespace {

struct ShareTestFlags {
  runtime::ShareTestOptions options;
  double seconds = 3;
  int period_ms = 5;
  double tolerance = -1;
  bool json = false;
};

// The time quota of each process (1 where none was given).
std::vector<double> TimeQuotas(const runtime::ShareTestOptions& o) {
  return o.time_quotas.empty() ? std::vector<double>(o.limits.size(), 1.0) : o.time_quotas;
}

void PrintResult(const runtime::ShareTestResult& r, const ShareTestFlags& f) {
  if (f.json) {
    nlohmann::json j = {{"device", r.device},         {"device_name", r.device_name},
                        {"gpu_uuid", r.gpu_uuid},     {"expected", r.expected},
                        {"measured", r.measured},     {"max_abs_error", r.max_abs_error},
                        {"blocks", r.blocks},         {"limits", f.options.limits},
                        {"time_quotas", TimeQuotas(f.options)},
                        {"time_window_periods", f.options.time_window_periods},
                        {"expected_time_share", r.expected_time_share},
                        {"measured_time_share", r.measured_time_share},
                        {"max_abs_time_error", r.max_abs_time_error},
                        {"period_ms", f.period_ms},   {"max_tokens", r.max_tokens},
                        {"capacity_blocks_per_s", r.capacity_blocks_per_s},
                        {"registered", r.registered}, {"controller", f.options.controller}};
    std::printf("%s\n", j.dump().c_str());
    return;
  }
  std::printf("device: %s (%s, %s, %d SMs)\n", r.device.c_str(), r.device_name.c_str(),
              r.gpu_uuid.c_str(), r.sm_count);
  std::printf("token server: %s controller, %d ms period, %lld blocks/period (capacity %lld "
              "blocks/s), %d/%zu processes registered\n",
              f.options.controller.c_str(), f.period_ms, static_cast<long long>(r.max_tokens),
              static_cast<long long>(r.capacity_blocks_per_s), r.registered, r.blocks.size());
  const std::vector<double> q = TimeQuotas(f.options);
  std::printf("%-8s %-7s %-7s %-9s %-9s %-10s %-10s %s\n", "process", "limit", "quota",
              "expected", "measured", "exp_time", "meas_time", "blocks");
  for (size_t i = 0; i < r.blocks.size(); ++i) {
    std::printf("%-8zu %-7.3f %-7.3f %-9.3f %-9.3f %-10.3f %-10.3f %lld\n", i,
                f.options.limits[i], q[i], r.expected[i], r.measured[i],
                r.expected_time_share[i], r.measured_time_share[i],
                static_cast<long long>(r.blocks[i]));
  }
  std::printf("max abs error: %.3f (shares), %.3f (device time)\n", r.max_abs_error,
              r.max_abs_time_error);
}

int RunShareTestCommand(ShareTestFlags& f) {
  f.options.duration = absl::Seconds(f.seconds);
  f.options.period = absl::Milliseconds(f.period_ms);
  absl::StatusOr<runtime::ShareTestResult> r = runtime::RunShareTest(f.options);
  if (!r.ok()) {
    std::fprintf(stderr, "sluice node share-test: %s\n", r.status().ToString().c_str());
    return absl::IsInvalidArgument(r.status()) ? 2 : 1;
  }
  PrintResult(*r, f);
  if (r->registered != static_cast<int>(r->blocks.size())) {
    std::fprintf(stderr, "share-test: only %d of %zu processes held a token-server slot\n",
                 r->registered, r->blocks.size());
    return 1;
  }
  const double error = std::max(r->max_abs_error, r->max_abs_time_error);
  return f.tolerance >= 0 && error > f.tolerance ? 1 : 0;
}

}  // namespace

void RegisterParamBenches(CLI::App& node, int& exit_code);  // param_bench_commands.cc

void RegisterNode(CLI::App& app, int& exit_code) {
  CLI::App* node = app.add_subcommand("node", "node-level GPU sharing tools");
  node->require_subcommand(1);
  auto flags = std::make_shared<ShareTestFlags>();  // owned by the callback below
  CLI::App* st = node->add_subcommand(
      "share-test", "run one saturating process per limit under the token server and report "
                    "each one's share of kernel throughput");
  st->add_option("--device", flags->options.device, "auto | emulated | cuda")
      ->capture_default_str();
  st->add_option("--limits", flags->options.limits, "comma-separated limits, each in (0, 1]")
      ->delimiter(',')
      ->capture_default_str();
  st->add_option("--time-quotas", flags->options.time_quotas,
                 "comma-separated time quotas (HAS-GPU's q), one per limit, each in (0, 1]; "
                 "default all 1")
      ->delimiter(',');
  st->add_option("--window-periods", flags->options.time_window_periods,
                 "time-quota window in token periods (1-1000)")
      ->capture_default_str();
  st->add_option("--seconds", flags->seconds, "measured window")->capture_default_str();
  st->add_option("--period-ms", flags->period_ms, "token period (1-1000 ms)")
      ->capture_default_str();
  st->add_option("--controller", flags->options.controller, "dilu | static | request")
      ->capture_default_str();
  st->add_option("--tolerance", flags->tolerance,
                 "exit 1 when max_abs_error or max_abs_time_error exceeds this");
  st->add_flag("--json", flags->json, "print one JSON object");
  st->callback([flags, &exit_code] { exit_code = RunShareTestCommand(*flags); });
  RegisterParamBenches(*node, exit_code);
}

}  // namespace sluice::cli
