// Zigzag live scaling: input validation, the schedule both plans are judged by, and the
// best-effort plan. The ILP is in zigzag_ilp.cc.
#include "core/llm/zigzag.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "core/llm/zigzag_internal.h"

namespace sluice::core::llm {
namespace {

absl::Status FieldError(absl::string_view field, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat("ZigzagInput.", field, ": ", message));
}

}  // namespace

absl::Status ValidateZigzagInput(const ZigzagInput& in) {
  if (in.num_layers < 1)
    return FieldError("num_layers", "must be >= 1");
  if (in.weight.empty())
    return FieldError("weight", "needs at least one batch");
  for (size_t i = 0; i < in.weight.size(); ++i) {
    if (!(std::isfinite(in.weight[i]) && in.weight[i] > 0))
      return FieldError(absl::StrCat("weight[", i, "]"), "must be a finite number > 0");
  }
  if (!(std::isfinite(in.layer_load_time) && in.layer_load_time >= 0))
    return FieldError("layer_load_time", "must be a finite number >= 0");
  if (in.layers_loaded < 0 || in.layers_loaded > in.num_layers)
    return FieldError("layers_loaded", "must be in [0, num_layers]");
  if (in.max_target_layers < -1 || in.max_target_layers > in.num_layers)
    return FieldError("max_target_layers", "must be -1 or in [0, num_layers]");
  if (!(std::isfinite(in.time_limit_ms) && in.time_limit_ms > 0))
    return FieldError("time_limit_ms", "must be a finite number > 0");
  return absl::OkStatus();
}

double LayerReadyTime(const ZigzagInput& in, int layer) {
  return std::max(0, layer - in.layers_loaded) * in.layer_load_time;
}

int TargetLayerCap(const ZigzagInput& in) {
  return in.max_target_layers < 0 ? in.num_layers / 2 : in.max_target_layers;
}

ZigzagSchedule SimulateZigzagSchedule(const ZigzagInput& in, const std::vector<int>& x) {
  SLUICE_CHECK(ValidateZigzagInput(in).ok());
  const int n = static_cast<int>(in.weight.size());
  SLUICE_CHECK(static_cast<int>(x.size()) == n);
  ZigzagSchedule s;
  s.target_finish.assign(n, 0);
  std::vector<int> next(n, 1);  // next target layer per batch
  int remaining = 0;
  for (int xi : x) {
    SLUICE_CHECK(xi >= 0 && xi <= in.num_layers);
    remaining += xi;
  }
  double t = 0;
  while (remaining > 0) {
    int run = -1;
    double earliest = std::numeric_limits<double>::infinity();
    for (int i = 0; i < n && run < 0; ++i) {
      if (next[i] > x[i])
        continue;
      const double ready = LayerReadyTime(in, next[i]);
      if (ready <= t)
        run = i;  // the earliest batch whose next layer is on the target
      else
        earliest = std::min(earliest, ready);
    }
    if (run < 0) {
      t = earliest;  // idle until the next layer the queue needs is loaded
      continue;
    }
    s.target.push_back({run, next[run], t, t + in.weight[run]});
    t += in.weight[run];
    if (next[run]++ == x[run])
      s.target_finish[run] = t;
    --remaining;
  }
  s.source_start.resize(n);
  s.finish.resize(n);
  double source_free = 0;
  for (int i = 0; i < n; ++i) {
    s.source_start[i] = std::max(source_free, s.target_finish[i]);
    s.finish[i] = s.source_start[i] + (in.num_layers - x[i]) * in.weight[i];
    source_free = s.finish[i];
  }
  return s;
}

std::vector<double> SimulateZigzag(const ZigzagInput& input, const std::vector<int>& x) {
  return SimulateZigzagSchedule(input, x).finish;
}

namespace internal {

ZigzagPlan Judge(const ZigzagInput& in, std::vector<int> x, std::string method, bool optimal) {
  ZigzagPlan p;
  p.finish_time = SimulateZigzag(in, x);
  p.target_layers = std::move(x);
  p.mean_latency = std::accumulate(p.finish_time.begin(), p.finish_time.end(), 0.0) /
                   static_cast<double>(p.finish_time.size());
  p.method = std::move(method);
  p.optimal = optimal;
  return p;
}

// Layers on the target by time t.
int LayersLoadedAt(const ZigzagInput& in, double t) {
  int k = in.layers_loaded;
  while (k < in.num_layers && LayerReadyTime(in, k + 1) <= t)
    ++k;
  return k;
}

std::vector<int> BestEffortLayers(const ZigzagInput& in) {
  const int cap = TargetLayerCap(in);
  // The target starts once its first layer is loaded (the paper's step 2) and takes the queued
  // batches in FIFO order, each with every loaded layer up to the cap.
  const double first = LayerReadyTime(in, 1);
  double target_free = 0;
  std::vector<int> x;
  for (double w : in.weight) {
    const double pick = std::max(target_free, first);
    const int xi = std::min(cap, LayersLoadedAt(in, pick));
    x.push_back(xi);
    if (xi > 0)
      target_free = pick + xi * w;
  }
  return x;
}

std::vector<int> LocalSearch(const ZigzagInput& in, std::vector<int> x) {
  const int cap = TargetLayerCap(in);
  auto total = [&](const std::vector<int>& v) {
    const std::vector<double> f = SimulateZigzag(in, v);
    return std::accumulate(f.begin(), f.end(), 0.0);
  };
  double best = total(x);
  for (bool improved = true; improved;) {
    improved = false;
    for (size_t i = 0; i < x.size(); ++i) {
      for (int step : {1, -1, 2, -2}) {
        const int old = x[i];
        x[i] = std::clamp(old + step, 0, cap);
        const double t = x[i] == old ? best : total(x);
        if (t < best - 1e-9) {
          best = t;
          improved = true;
        } else {
          x[i] = old;
        }
      }
    }
  }
  return x;
}

}  // namespace internal

absl::StatusOr<ZigzagPlan> PlanBestEffort(const ZigzagInput& input) {
  SLUICE_RETURN_IF_ERROR(ValidateZigzagInput(input));
  return internal::Judge(input, internal::BestEffortLayers(input), "best-effort", false);
}

}  // namespace sluice::core::llm
