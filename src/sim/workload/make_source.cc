// MakeArrivalSource and DeriveSeed (arrivals.h): reads the spec's file, if any, and builds the
// matching source from sources.h.
#include <cmath>

#include "absl/strings/str_cat.h"

#include "common/status.h"
#include "sim/workload/arrivals.h"
#include "sim/workload/file_io.h"
#include "sim/workload/random.h"
#include "sim/workload/sources.h"
#include "sim/workload/trace_readers.h"

namespace sluice::sim {
namespace {

// The file behind spec.path; read failures name the YAML place that asked for it.
absl::StatusOr<std::string> ReadSpecFile(const WorkloadSpec& spec) {
  absl::StatusOr<std::string> contents = ReadFileMaybeXz(spec.path);
  if (!contents.ok()) {
    return common::InputError({spec.source_file, spec.source_line}, "path",
                              contents.status().message());
  }
  return contents;
}

absl::Status CheckSpec(const WorkloadSpec& spec, absl::Duration horizon) {
  const common::InputLocation where{spec.source_file, spec.source_line};
  if (horizon < absl::ZeroDuration()) {
    return common::InputError(where, "horizon", "negative");
  }
  if (spec.start_offset < absl::ZeroDuration()) {
    return common::InputError(where, "start_offset_s", "must be >= 0");
  }
  if (!(spec.rate_rps >= 0)) {
    return common::InputError(where, "rate_rps", "must be >= 0");
  }
  if (!(spec.cv > 0)) {
    return common::InputError(where, "cv", "must be > 0");
  }
  if (!(spec.scale >= 0) || (spec.kind == WorkloadKind::kRequestTrace && spec.scale == 0)) {
    return common::InputError(where, "scale", "out of range");
  }
  if (spec.kind == WorkloadKind::kLongTail) {
    const LongTailArrivals& l = spec.longtail;
    if (!(l.rate_rps >= 0) || !std::isfinite(l.rate_rps))
      return common::InputError(where, "rate_rps", "must be >= 0");
    if (!(l.cv > 0))
      return common::InputError(where, "cv", "must be > 0");
    if (!(l.diurnal_amplitude >= 0 && l.diurnal_amplitude < 1))
      return common::InputError(where, "diurnal_amplitude", "must be in [0, 1)");
    if (l.trigger == AzureTrigger::kTimer && l.timer_period <= absl::ZeroDuration())
      return common::InputError(where, "timer_period", "must be > 0 for a timer");
  }
  return absl::OkStatus();
}

// A source that never yields (kind: none).
class EmptySource final : public ArrivalSource {
 public:
  std::optional<Arrival> Next() override { return std::nullopt; }
  double MeanRate() const override { return 0; }
};

}  // namespace

uint64_t DeriveSeed(uint64_t seed, uint64_t stream) {
  return SplitMix64(SplitMix64(seed) ^ SplitMix64(stream + 0x632be59bd9b4e019ULL));
}

absl::StatusOr<std::unique_ptr<ArrivalSource>> MakeArrivalSource(const WorkloadSpec& spec,
                                                                 uint64_t seed, absl::Time start,
                                                                 absl::Duration horizon) {
  SLUICE_RETURN_IF_ERROR(CheckSpec(spec, horizon));
  const ReplayWindow window{
      .start = start, .offset_s = absl::ToDoubleSeconds(spec.start_offset), .horizon = horizon};
  switch (spec.kind) {
    case WorkloadKind::kNone:
      return std::make_unique<EmptySource>();
    case WorkloadKind::kPoisson:
      return MakeRenewalSource(RenewalKind::kExponential, spec.rate_rps, 1.0, seed, window);
    case WorkloadKind::kGamma:
      return MakeRenewalSource(RenewalKind::kGamma, spec.rate_rps, spec.cv, seed, window);
    case WorkloadKind::kRpsSeries: {
      SLUICE_ASSIGN_OR_RETURN(const std::string text, ReadSpecFile(spec));
      SLUICE_ASSIGN_OR_RETURN(std::vector<double> values, ParseRpsSeries(text, spec.path));
      return MakeBucketSource(std::move(values), spec.scale, absl::Seconds(1), spec.spread, seed,
                              window);
    }
    case WorkloadKind::kRequestTrace: {
      SLUICE_ASSIGN_OR_RETURN(const std::string text, ReadSpecFile(spec));
      const RequestTraceColumns columns{.timestamp = spec.timestamp_column,
                                        .prompt_tokens = spec.prompt_tokens_column,
                                        .output_tokens = spec.output_tokens_column};
      SLUICE_ASSIGN_OR_RETURN(std::vector<TraceRequest> rows,
                              ParseRequestTrace(text, spec.path, columns));
      return MakeTraceSource(std::move(rows), spec.scale, window);
    }
    case WorkloadKind::kLongTail:
      return MakeLongTailSource(spec.longtail, seed, window);
    case WorkloadKind::kAzureFunctions: {
      SLUICE_ASSIGN_OR_RETURN(const std::string text, ReadSpecFile(spec));
      SLUICE_ASSIGN_OR_RETURN(std::vector<double> counts,
                              ParseAzureFunctionsRow(text, spec.path, spec.function_id));
      return MakeBucketSource(std::move(counts), spec.scale, absl::Minutes(1), spec.spread, seed,
                              window);
    }
  }
  return absl::InternalError(absl::StrCat("unhandled workload kind ", static_cast<int>(spec.kind)));
}

}  // namespace sluice::sim
