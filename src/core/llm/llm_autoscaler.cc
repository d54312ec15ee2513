// LlmAutoscaler: windowed tokens/s and KV-usage scaling of the prefill and decode pools. The rules
// are listed in the header; docs/blitzscale.md says where they were chosen rather than read.
#include "core/llm/llm_autoscaler.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace sluice::core::llm {
namespace {

absl::Status FieldError(absl::string_view field, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat("LlmScalerConfig.", field, ": ", message));
}

bool PositiveFinite(double v) { return std::isfinite(v) && v > 0; }

// ceil(load / upper), tolerant of rounding noise (3.0000000001 instances is 3).
int InstancesFor(double load, double upper) {
  return static_cast<int>(std::ceil(load / upper - 1e-9));
}

absl::Status ValidateBounds(absl::string_view pool, int min, int max) {
  if (min < 0)
    return FieldError(absl::StrCat("min_", pool), "must be >= 0");
  if (max < 1)
    return FieldError(absl::StrCat("max_", pool), "must be >= 1");
  if (max < min)
    return FieldError(absl::StrCat("max_", pool), absl::StrCat("must be >= min_", pool));
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateScalerConfig(const LlmScalerConfig& c) {
  if (c.window <= absl::ZeroDuration() || c.window == absl::InfiniteDuration())
    return FieldError("window", "must be a finite duration > 0");
  if (c.scale_down_timeout < absl::ZeroDuration() ||
      c.scale_down_timeout == absl::InfiniteDuration())
    return FieldError("scale_down_timeout", "must be a finite duration >= 0");
  if (!PositiveFinite(c.prefill_tokens_per_s_per_instance))
    return FieldError("prefill_tokens_per_s_per_instance", "must be a finite number > 0");
  if (!PositiveFinite(c.decode_tokens_per_s_per_instance))
    return FieldError("decode_tokens_per_s_per_instance", "must be a finite number > 0");
  if (!(c.kv_usage_upper > 0 && c.kv_usage_upper <= 1))
    return FieldError("kv_usage_upper", "must be in (0, 1]");
  if (!(c.lower_fraction > 0 && c.lower_fraction < 1))
    return FieldError("lower_fraction", "must be in (0, 1)");
  SLUICE_RETURN_IF_ERROR(ValidateBounds("prefill", c.min_prefill, c.max_prefill));
  return ValidateBounds("decode", c.min_decode, c.max_decode);
}

LlmAutoscaler::LlmAutoscaler(LlmScalerConfig config) : config_(config) {
  SLUICE_CHECK(ValidateScalerConfig(config_).ok());
}

void LlmAutoscaler::Observe(const LlmLoad& load) {
  window_.push_back(load);
  prefill_n_ = load.prefill_instances;
  decode_n_ = load.decode_instances;
  while (window_.size() > 1 && window_.front().now <= load.now - config_.window)
    window_.pop_front();
}

LlmAutoscaler::Means LlmAutoscaler::WindowMeans() const {
  Means m;
  for (const LlmLoad& l : window_) {
    m.prefill += l.prefill_tokens_per_s;
    m.decode += l.decode_tokens_per_s;
    // KV in instances' worth of memory: a fraction observed before a scale-out is relative to
    // the smaller pool, and averaging raw fractions would count that demand again.
    m.kv_instances += l.kv_usage * l.decode_instances;
  }
  const double n = static_cast<double>(window_.size());
  m.prefill /= n;
  m.decode /= n;
  m.kv_instances /= n;
  return m;
}

int LlmAutoscaler::DecidePrefill(const Means& m, int n, absl::Time now) {
  const double upper = config_.prefill_tokens_per_s_per_instance;
  const int desired =
      std::clamp(InstancesFor(m.prefill, upper), config_.min_prefill, config_.max_prefill);
  if (n > config_.max_prefill || desired > n) {
    prefill_low_since_ = absl::InfiniteFuture();
    return n > config_.max_prefill ? config_.max_prefill - n : desired - n;
  }
  const bool low = n > config_.min_prefill && m.prefill < config_.lower_fraction * upper * n &&
                   InstancesFor(m.prefill, upper) <= n - 1;
  if (!low) {
    prefill_low_since_ = absl::InfiniteFuture();
    return 0;
  }
  if (prefill_low_since_ == absl::InfiniteFuture())
    prefill_low_since_ = now;
  if (now - prefill_low_since_ < config_.scale_down_timeout)
    return 0;
  prefill_low_since_ = now;  // one step per timeout
  return -1;
}

int LlmAutoscaler::DecideDecode(const Means& m, int n, absl::Time now) {
  const double upper = config_.decode_tokens_per_s_per_instance;
  const double kv_upper = config_.kv_usage_upper;
  const double kv = n > 0 ? m.kv_instances / n : (m.kv_instances > 0 ? 1 : 0);
  int wanted = InstancesFor(m.decode, upper);
  if (kv > kv_upper)
    wanted = std::max(wanted, InstancesFor(m.kv_instances, kv_upper));
  const int desired = std::clamp(wanted, config_.min_decode, config_.max_decode);
  if (n > config_.max_decode || desired > n) {
    decode_low_since_ = absl::InfiniteFuture();
    return n > config_.max_decode ? config_.max_decode - n : desired - n;
  }
  // After the step the pool must still meet both bounds, so a constant load cannot oscillate.
  const bool fits_smaller = InstancesFor(m.decode, upper) <= n - 1 &&
                            (n - 1 > 0 ? m.kv_instances / (n - 1) <= kv_upper : kv <= 0);
  const bool low = n > config_.min_decode && m.decode < config_.lower_fraction * upper * n &&
                   kv < config_.lower_fraction * kv_upper && fits_smaller;
  if (!low) {
    decode_low_since_ = absl::InfiniteFuture();
    return 0;
  }
  if (decode_low_since_ == absl::InfiniteFuture())
    decode_low_since_ = now;
  if (now - decode_low_since_ < config_.scale_down_timeout)
    return 0;
  decode_low_since_ = now;
  return -1;
}

int LlmAutoscaler::Mutations(const Means& m, int prefill_n, int decode_out) const {
  if (!config_.allow_mutation || decode_out <= 0)
    return 0;
  const double upper = config_.prefill_tokens_per_s_per_instance;
  if (!(m.prefill < config_.lower_fraction * upper * prefill_n))
    return 0;  // the prefill pool has no spare capacity
  const int keep = std::max(config_.min_prefill, InstancesFor(m.prefill, upper));
  return std::clamp(prefill_n - keep, 0, decode_out);
}

LlmScaleDecision LlmAutoscaler::Decide(absl::Time now) {
  LlmScaleDecision d;
  if (window_.empty())
    return d;
  const Means m = WindowMeans();
  d.prefill_delta = DecidePrefill(m, prefill_n_, now);
  d.decode_delta = DecideDecode(m, decode_n_, now);
  if (d.prefill_delta <= 0) {
    const int mutate = Mutations(m, prefill_n_, d.decode_delta);
    if (mutate > 0) {
      d.mutate_prefill_to_decode = mutate;
      d.decode_delta -= mutate;
      d.prefill_delta = 0;  // the switch is this tick's prefill change
      prefill_low_since_ = absl::InfiniteFuture();
    }
  }
  prefill_n_ += d.prefill_delta - d.mutate_prefill_to_decode;
  decode_n_ += d.decode_delta + d.mutate_prefill_to_decode;
  return d;
}

absl::Time LlmAutoscaler::NextWakeup() const {
  absl::Time next = absl::InfiniteFuture();
  if (prefill_low_since_ != absl::InfiniteFuture())
    next = std::min(next, prefill_low_since_ + config_.scale_down_timeout);
  if (decode_low_since_ != absl::InfiniteFuture())
    next = std::min(next, decode_low_since_ + config_.scale_down_timeout);
  return next;
}

LlmScalerConfig FillProfiledBounds(LlmScalerConfig c, const LlmPerfModel& model,
                                   const LlmBoundsShape& shape) {
  constexpr double kHeadroom = 0.8;
  const int prompt = std::max(1, shape.prompt_tokens);
  const int output = std::max(1, shape.output_tokens);
  if (c.prefill_tokens_per_s_per_instance <= 0) {
    const int chunk = std::max(1, shape.max_batch_tokens);
    const double t = absl::ToDoubleSeconds(model.PrefillTime(chunk, std::max(1, chunk / prompt)));
    c.prefill_tokens_per_s_per_instance = kHeadroom * chunk / std::max(t, 1e-6);
  }
  if (c.decode_tokens_per_s_per_instance <= 0) {
    const int64_t per_seq = static_cast<int64_t>(prompt) + output;
    const int b = static_cast<int>(std::clamp<int64_t>(model.spec().KvCapacityTokens() / per_seq,
                                                       1, std::max(1, shape.max_decode_batch)));
    const double t =
        absl::ToDoubleSeconds(model.DecodeTime(b, static_cast<int64_t>(b) * (prompt + output / 2)));
    c.decode_tokens_per_s_per_instance = kHeadroom * b / std::max(t, 1e-6);
  }
  return c;
}

}  // namespace sluice::core::llm
