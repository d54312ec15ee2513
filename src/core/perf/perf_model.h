// GPU performance model of the policy core: per-model batch latency as a function of batch size,
// SM share and time-slice quota, training iteration time, and the co-location slowdown. The
// simulator asks it for every batch it executes; scalers and placement use it for capacity.
// Thread-compatible: a PerfModel is built once (BuiltIn() and Add()), then read concurrently.
#ifndef SLUICE_CORE_PERF_PERF_MODEL_H_
#define SLUICE_CORE_PERF_PERF_MODEL_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

#include "common/units.h"
#include "core/policy/placement.h"

namespace sluice::core {

// One model's latency behaviour. Thread-compatible, immutable after construction. Evaluation is
// cheap (no allocation, no failure: out-of-range arguments are clamped as stated below), so the
// simulator may call it once per executed batch.
//
// Arguments, for every method:
//   batch       >= 1 requests (values < 1 are treated as 1);
//   sm_share    fraction of the GPU's SMs, in (0, 1] (clamped to [0.01, 1]);
//   time_quota  HAS-GPU / FaST-GShare time-slice quota, the fraction of each scheduling window
//               the instance may run, in (0, 1] (clamped to [0.01, 1]); 1 = no time slicing.
// Every result is finite, positive, monotone non-decreasing in batch and monotone
// non-increasing in sm_share and time_quota.
//
// Meaning for LLMs (FunctionKind::kLlmInference): BatchLatency is the time of ONE DECODE STEP
// (one output token) for `batch` concurrent sequences; a request with P prompt tokens and O output
// tokens served alone takes PrefillLatency(P, s) + O * BatchLatency(1, s). For all other models
// BatchLatency is the time to run one batch end to end, and PrefillLatency is zero.
class LatencyModel {
 public:
  virtual ~LatencyModel() = default;
  // Execution time of one batch of `batch` requests (LLMs: one decode step of `batch` sequences).
  virtual absl::Duration BatchLatency(int batch, double sm_share,
                                      double time_quota = 1.0) const = 0;
  // Training: one iteration (forward + backward of the model's training batch) at SM share.
  virtual absl::Duration IterationTime(double sm_share) const = 0;
  // LLMs: time to prefill `prompt_tokens` (>= 0) prompt tokens of one request at SM share,
  // monotone non-decreasing in prompt_tokens and non-increasing in sm_share. Zero for models
  // without a prefill phase.
  virtual absl::Duration PrefillLatency(int prompt_tokens, double sm_share) const {
    return absl::ZeroDuration();
  }
};

struct ModelInfo {
  std::string name;  // canonical lower-case, e.g. "resnet152", "llama2-7b"
  FunctionKind kind = FunctionKind::kInference;  // LLMs are kLlmInference
  common::Bytes param_bytes;                     // what a cold start loads
  common::Bytes gpu_memory;  // footprint of one inference instance (params + activations + runtime)
  int training_batch = 32;   // batch of one training iteration (IterationTime)
};

struct ModelEntry {
  ModelInfo info;
  const LatencyModel* latency = nullptr;  // owned by the PerfModel; never null
};

class PerfModel {
 public:
  // Default co-location slowdown coefficient, fitted to gpulet-reimpl-profiles/interference.csv
  // (see docs/perf-model.md and sluice_sim_perf_fit).
  static const double kDefaultInterferenceKappa;

  // An empty catalogue (interference kappa = kDefaultInterferenceKappa).
  PerfModel();
  PerfModel(const PerfModel&) = delete;
  PerfModel& operator=(const PerfModel&) = delete;

  // The built-in catalogue: analytic models (AnalyticLatencyModel) with fitted parameters shipped
  // as C++ constants, for resnet152, vgg19, bert-base, roberta-large, gpt2-large, llama2-7b and
  // chatglm3-6b. Never touches files. See docs/perf-model.md for provenance and fit error.
  static std::unique_ptr<PerfModel> BuiltIn();

  // The entry for `name` (case-insensitive; '_' and '-' are equivalent). NotFound lists the known
  // models. The pointer stays valid until the PerfModel dies or Add() replaces that name; callers
  // on hot paths (the simulator) look an entry up once and keep the pointer.
  absl::StatusOr<const ModelEntry*> Find(absl::string_view name) const;
  // Adds or replaces a model (e.g. a table-backed one loaded by the simulator). InvalidArgument
  // when the name is empty, `model` is null, training_batch < 1 or a byte size is negative.
  [[nodiscard]] absl::Status Add(ModelInfo info, std::unique_ptr<LatencyModel> model);
  // Canonical names of all models, sorted.
  std::vector<std::string> names() const;

  // Co-location slowdown multiplier for an instance whose co-runners on the same GPU are busy
  // with a summed SM share `co_runner_share` (clamped to [0, 1]): 1 + kappa * co_runner_share.
  // Multiply BatchLatency by it. Always >= 1.
  double InterferenceSlowdown(double co_runner_share) const;
  // Sets kappa (clamped to >= 0).
  void set_interference_kappa(double k);
  double interference_kappa() const { return kappa_; }

  // The canonical form of a model name: lower-case, '_' mapped to '-'.
  static std::string CanonicalName(absl::string_view name);

 private:
  struct Slot {
    ModelEntry entry;
    std::unique_ptr<LatencyModel> model;
  };
  absl::flat_hash_map<std::string, std::unique_ptr<Slot>> models_;
  double kappa_;
};

}  // namespace sluice::core

#endif  // SLUICE_CORE_PERF_PERF_MODEL_H_
