// InferLineScaler (see inferline_scaler.h).
#include "core/baselines/inferline_scaler.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace sluice::core {
namespace {

bool Finite(absl::Duration d) {
  return d != absl::InfiniteDuration();
}

absl::Status StageError(size_t i, absl::string_view field, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat("field 'stages[", i, "].", field, "': ", message));
}

absl::Status Validate(const InferLineConfig& c) {
  if (c.stages.empty())
    return absl::InvalidArgumentError("field 'stages': must not be empty");
  for (size_t i = 0; i < c.stages.size(); ++i) {
    const InferLineStage& s = c.stages[i];
    if (!(s.service_rps > 0) || !std::isfinite(s.service_rps))
      return StageError(i, "service_rps", "must be finite and > 0");
    if (s.budget <= absl::Seconds(1.0 / s.service_rps) || !Finite(s.budget))
      return StageError(i, "budget", "must be finite and above the service time 1/mu");
    if (s.min_replicas < 0)
      return StageError(i, "min_replicas", "must be >= 0");
    if (s.max_replicas < std::max(1, s.min_replicas))
      return StageError(i, "max_replicas", "must be >= max(1, min_replicas)");
  }
  for (auto [name, d] :
       {std::pair{"plan_period", c.plan_period}, std::pair{"tuner_history", c.tuner_history}}) {
    if (d <= absl::ZeroDuration() || !Finite(d))
      return absl::InvalidArgumentError(absl::StrCat("field '", name, "': must be finite and > 0"));
  }
  if (c.scale_down_hold < absl::ZeroDuration() || !Finite(c.scale_down_hold))
    return absl::InvalidArgumentError("field 'scale_down_hold': must be finite and >= 0");
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<InferLineScaler>> InferLineScaler::Create(
    const InferLineConfig& config) {
  if (absl::Status s = Validate(config); !s.ok())
    return s;
  return std::unique_ptr<InferLineScaler>(new InferLineScaler(config));
}

InferLineScaler::InferLineScaler(const InferLineConfig& c) : config_(c), stages_(c.stages.size()) {
  for (size_t i = 0; i < c.stages.size(); ++i)
    stages_[i].target = std::max(1, c.stages[i].min_replicas);
}

void InferLineScaler::Observe(const std::vector<PipelineStageSample>& samples, absl::Time now) {
  if (samples.size() != config_.stages.size())
    return;
  Window w;
  w.end = now;
  if (last_observed_ != absl::InfinitePast() && now > last_observed_)
    w.seconds = absl::ToDoubleSeconds(now - last_observed_);
  const double rps = samples[0].arrival_rps;
  w.arrivals = std::isfinite(rps) ? std::max(0.0, rps) * w.seconds : 0.0;
  last_observed_ = now;
  windows_.push_back(w);
  const absl::Duration keep = std::max(config_.plan_period, config_.tuner_history);
  while (!windows_.empty() && windows_.front().end <= now - keep)
    windows_.pop_front();
  samples_ = samples;
  fresh_ = true;
}

int InferLineScaler::Needed(int i, absl::Duration history) const {
  const InferLineStage& s = config_.stages[i];
  const absl::Time from = windows_.empty() ? absl::InfinitePast() : windows_.back().end - history;
  std::vector<const Window*> ws;
  for (const Window& w : windows_) {
    if (w.end > from)
      ws.push_back(&w);
  }
  const double slack = absl::ToDoubleSeconds(s.budget) - 1.0 / s.service_rps;  // > 0
  double rate = 0;  // the service rate every envelope point asks for
  // Envelope points at 1, 2, 4, ... consecutive windows and the whole history: the most
  // arrivals in any run of k windows.
  for (size_t step = 1; !ws.empty(); step *= 2) {
    const size_t k = std::min(step, ws.size());
    double sum = 0, secs = 0, best = 0, best_secs = 1;
    for (size_t j = 0; j < ws.size(); ++j) {
      sum += ws[j]->arrivals;
      secs += ws[j]->seconds;
      if (j >= k) {
        sum -= ws[j - k]->arrivals;
        secs -= ws[j - k]->seconds;
      }
      if (j + 1 >= k && sum > best) {
        best = sum;
        best_secs = secs;
      }
    }
    rate = std::max(rate, best / (best_secs + slack));
    if (k == ws.size())
      break;
  }
  const double r = std::ceil(rate / s.service_rps - 1e-9);
  return static_cast<int>(std::clamp<double>(r, std::max(1, s.min_replicas), s.max_replicas));
}

void InferLineScaler::Tune(int i, absl::Time now) {
  StageState& st = stages_[i];
  const int need = Needed(i, config_.tuner_history);
  if (need >= st.target) {
    st.target = need;  // up at once
    st.below_since = absl::InfiniteFuture();
    return;
  }
  if (st.below_since == absl::InfiniteFuture()) {
    st.below_since = now;
    st.most_needed_below = need;
  }
  st.most_needed_below = std::max(st.most_needed_below, need);
  if (now - st.below_since >= config_.scale_down_hold) {
    st.target = st.most_needed_below;
    st.below_since = absl::InfiniteFuture();
  }
}

PipelineDecision InferLineScaler::Decide(absl::Time now, int) {
  PipelineDecision d;
  const int n = static_cast<int>(config_.stages.size());
  d.stages.resize(n);
  if (!fresh_)
    return d;
  fresh_ = false;
  const bool plan = last_plan_ == absl::InfinitePast() || now - last_plan_ >= config_.plan_period;
  if (plan)
    last_plan_ = now;
  for (int i = 0; i < n; ++i) {
    if (plan) {
      stages_[i].target = Needed(i, config_.plan_period);
      stages_[i].below_since = absl::InfiniteFuture();
    }
    Tune(i, now);
    const int have =
        std::max(0, samples_[i].ready_replicas) + std::max(0, samples_[i].starting_replicas);
    d.stages[i].replica_delta = stages_[i].target - have;
  }
  return d;
}

}  // namespace sluice::core
