// Fits of the LLM model's token-linear and all-reduce constants; see llm_perf_fit.h.
#include "core/perf/llm_perf_fit.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/status.h"
#include "core/perf/nelder_mead.h"

namespace sluice::core {
namespace {

using common::InputError;

// x = {log t0, log c, p}.
LlmLinearParams FromX(std::span<const double> x) {
  return {std::exp(x[0]), std::exp(x[1]), x[2]};
}

struct AllReduceColumns {
  size_t time = 0, workers = 0, size = 0, devices = 0, count = 0;
};

absl::StatusOr<AllReduceColumns> AllReduceHeader(absl::string_view file,
                                                 const std::vector<std::string>& h) {
  AllReduceColumns c;
  c.count = h.size();
  int found = 0;
  for (size_t i = 0; i < h.size(); ++i) {
    if (h[i] == "time_stats.all_reduce.median")
      c.time = i, ++found;
    if (h[i] == "num_workers")
      c.workers = i, ++found;
    if (h[i] == "size")
      c.size = i, ++found;
    if (h[i] == "devices_per_node")
      c.devices = i, ++found;
  }
  if (found != 4) {
    return InputError({std::string(file), 1}, "header",
                      "needs time_stats.all_reduce.median, num_workers, size, devices_per_node");
  }
  return c;
}

absl::StatusOr<VidurAllReduceTime> AllReduceRow(absl::string_view file, int line,
                                                const std::vector<std::string>& f,
                                                const AllReduceColumns& c) {
  if (f.size() != c.count) {
    return InputError({std::string(file), line}, "row",
                      absl::StrCat("expected ", c.count, " columns, got ", f.size()));
  }
  VidurAllReduceTime r;
  r.line = line;
  double ms = 0;
  if (!absl::SimpleAtod(f[c.time], &ms) || !(ms > 0))
    return InputError({std::string(file), line}, "time_stats.all_reduce.median", "not > 0");
  r.time_s = ms / 1000.0;
  if (!absl::SimpleAtoi(f[c.size], &r.size_bytes) || r.size_bytes < 0)
    return InputError({std::string(file), line}, "size", "not a byte count");
  if (!absl::SimpleAtoi(f[c.workers], &r.num_workers) || r.num_workers < 1)
    return InputError({std::string(file), line}, "num_workers", "not an integer >= 1");
  if (!absl::SimpleAtoi(f[c.devices], &r.devices_per_node) || r.devices_per_node < 1)
    return InputError({std::string(file), line}, "devices_per_node", "not an integer >= 1");
  return r;
}

}  // namespace

std::vector<VidurLayerTime> VidurRowsAtTp(std::span<const VidurLayerTime> rows, int tp) {
  std::vector<VidurLayerTime> out;
  for (const VidurLayerTime& r : rows) {
    if (r.tensor_parallel == tp)
      out.push_back(r);
  }
  return out;
}

FitError MeasureLlmLinear(const LlmLinearParams& params, std::span<const VidurLayerTime> rows) {
  FitError e;
  for (const VidurLayerTime& r : rows) {
    if (r.layer_time_s > 0)
      e.Add(LlmLinearLayerSeconds(params, r.num_tokens), r.layer_time_s);
  }
  e.Finish();
  return e;
}

absl::StatusOr<LlmLinearFit> FitLlmLinear(std::span<const VidurLayerTime> rows) {
  if (rows.size() < 4)
    return absl::InvalidArgumentError("FitLlmLinear: fewer than 4 rows");
  double small = std::numeric_limits<double>::infinity(), slope = 0;
  for (const VidurLayerTime& r : rows) {
    if (r.layer_time_s <= 0)
      return absl::InvalidArgumentError(absl::StrCat("FitLlmLinear: row at line ", r.line,
                                                     " has a non-positive layer time"));
    small = std::min(small, r.layer_time_s);
    slope = std::max(slope, r.layer_time_s / r.num_tokens);
  }
  auto objective = [&](std::span<const double> x) {
    if (x[2] < 0.5 || x[2] > 20)
      return std::numeric_limits<double>::infinity();
    LlmLinearParams p = FromX(x);
    double sum = 0;
    for (const VidurLayerTime& r : rows) {
      double d = std::log(LlmLinearLayerSeconds(p, r.num_tokens) / r.layer_time_s);
      sum += d * d;
    }
    return sum;
  };
  NelderMeadResult best;
  best.value = std::numeric_limits<double>::infinity();
  for (double p0 : {1.0, 2.0, 4.0}) {
    // The largest per-token time is the small-n floor; the slope is best seen at the top rows.
    std::vector<double> x0 = {std::log(small), std::log(slope / 8), p0};
    NelderMeadResult r = NelderMead(objective, x0, {0.2, 0.5, 0.5});
    if (r.value < best.value)
      best = r;
  }
  LlmLinearFit fit{FromX(best.x), {}};
  fit.error = MeasureLlmLinear(fit.params, rows);
  return fit;
}

absl::StatusOr<std::vector<VidurAllReduceTime>> ParseVidurAllReduce(absl::string_view contents,
                                                                    absl::string_view file) {
  std::vector<VidurAllReduceTime> out;
  AllReduceColumns cols;
  int line = 0;
  for (absl::string_view text : absl::StrSplit(contents, '\n')) {
    ++line;
    text = absl::StripAsciiWhitespace(text);
    if (text.empty())
      continue;
    std::vector<std::string> fields = absl::StrSplit(text, ',');
    if (line == 1) {
      SLUICE_ASSIGN_OR_RETURN(cols, AllReduceHeader(file, fields));
      continue;
    }
    SLUICE_ASSIGN_OR_RETURN(VidurAllReduceTime r, AllReduceRow(file, line, fields, cols));
    out.push_back(r);
  }
  if (out.empty())
    return InputError({std::string(file), 0}, "contents", "no data rows");
  return out;
}

FitError MeasureAllReduce(const AllReduceParams& params, std::span<const VidurAllReduceTime> rows,
                          int workers) {
  FitError e;
  for (const VidurAllReduceTime& r : rows) {
    if (r.num_workers == workers && r.devices_per_node == workers) {
      e.Add(params.latency_s + static_cast<double>(r.size_bytes) / params.bytes_per_s,
                 r.time_s);
    }
  }
  e.Finish();
  return e;
}

absl::StatusOr<AllReduceFit> FitAllReduce(std::span<const VidurAllReduceTime> rows, int workers) {
  // Minimise sum ((a + s k - t) / t)^2: weighted linear least squares in (a, k).
  double s11 = 0, s12 = 0, s22 = 0, b1 = 0, b2 = 0;
  int n = 0;
  for (const VidurAllReduceTime& r : rows) {
    if (r.num_workers != workers || r.devices_per_node != workers)
      continue;
    double x1 = 1 / r.time_s, x2 = static_cast<double>(r.size_bytes) / r.time_s;
    s11 += x1 * x1, s12 += x1 * x2, s22 += x2 * x2, b1 += x1, b2 += x2;
    ++n;
  }
  double det = s11 * s22 - s12 * s12;
  if (n < 2 || det <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("FitAllReduce: fewer than 2 distinct intra-node rows for ", workers, " GPUs"));
  }
  double a = (b1 * s22 - b2 * s12) / det, k = (s11 * b2 - s12 * b1) / det;
  if (k <= 0)
    return absl::InvalidArgumentError("FitAllReduce: time does not grow with size");
  AllReduceFit fit{{std::max(a, 0.0), 1 / k}, {}};
  fit.error = MeasureAllReduce(fit.params, rows, workers);
  return fit;
}

}  // namespace sluice::core
