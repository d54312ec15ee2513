// RunShareTest: `sluice node share-test`. Starts a token server (Dilu's controller by default)
// and its registration socket for one GPU, then one saturating sluice-spin process per limit
// (with an optional HAS-GPU time quota each) under libsluice_cuda.so, and measures each
// process's share of kernel throughput over a common window. Runs on a real GPU (the real driver) or on the emulated device (a private emulated
// GPU per run). Blocking; call from one thread.
#ifndef SLUICE_RUNTIME_NODE_CLI_SHARE_TEST_H_
#define SLUICE_RUNTIME_NODE_CLI_SHARE_TEST_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace sluice::runtime {

struct ShareTestOptions {
  std::string device = "auto";  // auto | emulated | cuda
  std::vector<double> limits = {0.3, 0.7};  // each in (0, 1]: request = limit (a static share)
  // Time quota q per process, each in (0, 1]; empty = all 1. Same length as `limits`.
  std::vector<double> time_quotas;
  int time_window_periods = 1;  // the token server's time window, in periods [1, 1000]
  absl::Duration duration = absl::Seconds(3);  // measured window
  absl::Duration warmup = absl::Milliseconds(500);
  absl::Duration period = absl::Milliseconds(5);
  std::string controller = "dilu";
  // Budgets total (1 - headroom) of the measured device throughput, so the device never queues
  // more than a period of work and every process can spend its whole budget.
  double headroom = 0.05;
  int64_t block_ns = 100000;  // spin time of one block
  // Paths; empty = located (env SLUICE_SPIN / SLUICE_INTERCEPT_LIB / SLUICE_EMULATED_DIR, then
  // the build tree this binary came from, then next to the executable).
  std::string spin_path, intercept_lib, emulated_dir;
};

struct ShareTestResult {
  std::string device;       // "emulated" or "cuda"
  std::string device_name;  // from the driver
  std::string gpu_uuid;
  int sm_count = 0;
  int64_t capacity_blocks_per_s = 0;  // measured with one unthrottled process
  int64_t max_tokens = 0;             // blocks per period the server hands out
  int registered = 0;                 // processes that held a token-server slot mid-run
  // Entitlements when every process runs flat out (ExpectedTimeShares): e_i = s_i / max(1,
  // sum s) x q_i. expected = e_i / sum(e); measured = blocks_i / sum(blocks) in the window.
  std::vector<double> expected;
  std::vector<double> measured;
  // Absolute shares of device time: expected = e_i x the budgeted fraction of the device
  // (max_tokens per period / measured capacity per period); measured = blocks_i / (capacity x
  // window).
  std::vector<double> expected_time_share;
  std::vector<double> measured_time_share;
  std::vector<int64_t> blocks;
  double max_abs_error = 0;       // over expected vs measured
  double max_abs_time_error = 0;  // over the absolute time shares
};

// e_i = limits_i / max(1, sum(limits)) x time_quotas_i (1 when `time_quotas` is empty): the
// SM shares fitted to one GPU, then each cut to its time quota. Pure.
std::vector<double> ExpectedTimeShares(const std::vector<double>& limits,
                                       const std::vector<double>& time_quotas);

absl::StatusOr<ShareTestResult> RunShareTest(const ShareTestOptions& options);

// Shares of `values` (value / sum); all zero when the sum is 0.
std::vector<double> Shares(const std::vector<double>& values);

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_NODE_CLI_SHARE_TEST_H_
