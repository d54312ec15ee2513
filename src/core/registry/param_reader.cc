// ParamReader.
#include "core/registry/param_reader.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include "common/status.h"

namespace sluice::core {

ParamReader::ParamReader(absl::string_view policy, std::span<const PolicyParam> params,
                         std::string file)
    : policy_(policy), params_(params), file_(std::move(file)) {}

const PolicyParam* ParamReader::Find(absl::string_view key) {
  known_.emplace_back(key);
  for (const PolicyParam& p : params_) {
    if (p.key == key)
      return &p;
  }
  return nullptr;
}

absl::Status ParamReader::Error(const PolicyParam& p, absl::string_view message) const {
  return common::InputError({file_, p.line}, p.key,
                            absl::StrCat("policy '", policy_, "': ", message));
}

absl::StatusOr<double> ParamReader::Double(absl::string_view key, double fallback, double min,
                                           double max) {
  const PolicyParam* p = Find(key);
  if (p == nullptr)
    return fallback;
  double v = 0;
  if (!absl::SimpleAtod(p->value, &v) || !std::isfinite(v)) {
    return Error(*p, absl::StrCat("'", p->value, "' is not a number"));
  }
  if (v < min || v > max) {
    return Error(*p, absl::StrCat(v, " is outside [", min, ", ", max, "]"));
  }
  return v;
}

absl::StatusOr<int64_t> ParamReader::Int(absl::string_view key, int64_t fallback, int64_t min,
                                         int64_t max) {
  const PolicyParam* p = Find(key);
  if (p == nullptr)
    return fallback;
  int64_t v = 0;
  if (!absl::SimpleAtoi(p->value, &v)) {
    return Error(*p, absl::StrCat("'", p->value, "' is not an integer"));
  }
  if (v < min || v > max) {
    return Error(*p, absl::StrCat(v, " is outside [", min, ", ", max, "]"));
  }
  return v;
}

absl::StatusOr<absl::Duration> ParamReader::Seconds(absl::string_view key, absl::Duration fallback,
                                                    double min_s, double max_s) {
  const bool present = std::any_of(params_.begin(), params_.end(),
                                   [&](const PolicyParam& p) { return p.key == key; });
  SLUICE_ASSIGN_OR_RETURN(const double s, Double(key, 0, min_s, max_s));
  return present ? absl::Seconds(s) : fallback;
}

absl::StatusOr<bool> ParamReader::Bool(absl::string_view key, bool fallback) {
  const PolicyParam* p = Find(key);
  if (p == nullptr)
    return fallback;
  if (p->value == "true")
    return true;
  if (p->value == "false")
    return false;
  return Error(*p, absl::StrCat("'", p->value, "' is not true or false"));
}

absl::StatusOr<std::string> ParamReader::Choice(absl::string_view key, absl::string_view fallback,
                                                std::initializer_list<absl::string_view> allowed) {
  const PolicyParam* p = Find(key);
  if (p == nullptr)
    return std::string(fallback);
  for (absl::string_view a : allowed) {
    if (p->value == a)
      return p->value;
  }
  return Error(*p, absl::StrCat("'", p->value, "' is not one of ", absl::StrJoin(allowed, ", ")));
}

absl::Status ParamReader::Finish() const {
  for (size_t i = 0; i < params_.size(); ++i) {
    const PolicyParam& p = params_[i];
    for (size_t j = 0; j < i; ++j) {
      if (params_[j].key == p.key) {
        return Error(p, absl::StrCat("given twice (first on line ", params_[j].line, ")"));
      }
    }
    if (std::find(known_.begin(), known_.end(), p.key) == known_.end()) {
      std::vector<std::string> keys = known_;
      std::sort(keys.begin(), keys.end());
      keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
      return Error(p, absl::StrCat("unknown key; known: ",
                                   keys.empty() ? "(none)" : absl::StrJoin(keys, ", ")));
    }
  }
  return absl::OkStatus();
}

}  // namespace sluice::core
