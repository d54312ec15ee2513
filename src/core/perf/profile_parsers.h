// Parsers for the GPU profile tables the performance model is built and fitted from: Dilu's
// bs_sm_*.csv, RaPP/HAS-GPU's latency-by-SM-quota-batch table, and the gpulet re-implementation's
// inference.csv and interference.csv (formats: each SOURCE.md under ../shared/data). Pure functions
// over file *contents*; the caller reads (and un-xz's) the file. Errors name file, line and field.
// Thread-safe: stateless.
#ifndef SLUICE_CORE_PERF_PROFILE_PARSERS_H_
#define SLUICE_CORE_PERF_PROFILE_PARSERS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace sluice::core {

// One measured latency: `batch` requests at `sm_share` of the SMs and `time_quota` of the time.
struct ProfilePoint {
  std::string model;
  int batch = 1;
  double sm_share = 1.0;    // (0, 1]
  double time_quota = 1.0;  // (0, 1]; 1 where the source has no time slicing
  double latency_s = 0;     // > 0
  int line = 0;             // 1-based line in the source file; 0 when not from a file
};

// Model A's latency while co-located with model B on one GPU (gpulet interference.csv).
struct InterferencePoint {
  std::string model_a;
  int batch_a = 1;
  double share_a = 1.0;  // A's MPS partition; B holds the rest of the GPU
  std::string model_b;
  int batch_b = 1;
  double latency_s = 0;  // A's latency
  int line = 0;
};

// Dilu profiles_bs_sm/*.csv: `batch,sm_percent,latency_s,throughput`, no header. `model` names
// the model (the file does not). Blank lines are skipped. time_quota is 1.
absl::StatusOr<std::vector<ProfilePoint>> ParseDiluProfile(absl::string_view contents,
                                                           absl::string_view file,
                                                           absl::string_view model);

// RaPP rapp_latency_sm_quota_batch.csv (decompressed): header `model,sm_pct,batch,quota_pct,
// latency_ms`, then one row per measurement, all models in one file.
absl::StatusOr<std::vector<ProfilePoint>> ParseRappProfiles(absl::string_view contents,
                                                            absl::string_view file);

// gpulet inference.csv: `model,batch,partition_pct,throughput,<req/s>,latency,<s>,<flag>`, no
// header. time_quota is 1.
absl::StatusOr<std::vector<ProfilePoint>> ParseGpuletInference(absl::string_view contents,
                                                               absl::string_view file);

// gpulet interference.csv: `modelA,batchA,partitionA,modelB,batchB,throughput,<A req/s>,latency,
// <A s>,<flag>`, no header.
absl::StatusOr<std::vector<InterferencePoint>> ParseGpuletInterference(absl::string_view contents,
                                                                       absl::string_view file);

// One row of a Vidur operator profile (compute/<sku>/<model>/mlp.csv, decompressed): the summed
// median time of one transformer layer's token-linear operators (every time_stats.<op>.median
// column except the once-per-model `emb`) for `num_tokens` tokens.
struct VidurLayerTime {
  int num_tokens = 1;
  int tensor_parallel = 1;
  double layer_time_s = 0;
  int line = 0;
};

// Vidur mlp.csv: a header naming the columns (time_stats.<op>.{min,max,mean,median,std}, ...,
// num_tokens, num_tensor_parallel_workers), times in milliseconds.
absl::StatusOr<std::vector<VidurLayerTime>> ParseVidurMlp(absl::string_view contents,
                                                          absl::string_view file);

}  // namespace sluice::core

#endif  // SLUICE_CORE_PERF_PROFILE_PARSERS_H_
