// Registry and per-type rendering; see registry.h.
#include "runtime/metrics/registry.h"

#include "absl/strings/match.h"
#include "common/status.h"

namespace sluice::runtime {
namespace internal {
namespace {

// `name{labels} value\n`, or `name value\n` without labels.
void AppendSample(const std::string& name, absl::string_view labels, const std::string& value,
                  std::string* out) {
  if (labels.empty()) {
    absl::StrAppend(out, name, " ", value, "\n");
  } else {
    absl::StrAppend(out, name, "{", labels, "} ", value, "\n");
  }
}

}  // namespace

void RenderSeries(const std::string& name, const std::string& labels, const Counter& cell,
                  std::string* out) {
  AppendSample(name, labels, FormatDouble(cell.Value()), out);
}

void RenderSeries(const std::string& name, const std::string& labels, const Gauge& cell,
                  std::string* out) {
  AppendSample(name, labels, FormatDouble(cell.Value()), out);
}

void RenderSeries(const std::string& name, const std::string& labels, const Histogram& cell,
                  std::string* out) {
  const Histogram::Snapshot snapshot = cell.Take();
  const std::string bucket = absl::StrCat(name, "_bucket");
  const std::string prefix = labels.empty() ? "" : absl::StrCat(labels, ",");
  for (size_t i = 0; i < snapshot.cumulative_counts.size(); ++i) {
    const std::string le =
        i < cell.bounds().size() ? FormatDouble(cell.bounds()[i]) : std::string("+Inf");
    AppendSample(bucket, absl::StrCat(prefix, "le=\"", le, "\""),
                 FormatCount(snapshot.cumulative_counts[i]), out);
  }
  AppendSample(absl::StrCat(name, "_sum"), labels, FormatDouble(snapshot.sum), out);
  AppendSample(absl::StrCat(name, "_count"), labels, FormatCount(snapshot.count), out);
}

}  // namespace internal

namespace {

template <typename T>
absl::StatusOr<Family<T>*> Install(std::map<std::string, std::unique_ptr<internal::FamilyBase>>&
                                       families,
                                   std::unique_ptr<Family<T>> family, absl::string_view name) {
  Family<T>* raw = family.get();
  if (raw->label_names().empty()) {
    SLUICE_RETURN_IF_ERROR(raw->WithLabels({}).status());  // Cannot fail: zero labels, zero values.
  }
  families.emplace(std::string(name), std::move(family));
  return raw;
}

}  // namespace

absl::Status Registry::Claim(absl::string_view name, const std::vector<std::string>& label_names,
                             const std::vector<std::string>& suffixes) {
  SLUICE_RETURN_IF_ERROR(ValidateMetricName(name));
  std::set<std::string> seen;
  for (const std::string& label : label_names) {
    SLUICE_RETURN_IF_ERROR(ValidateLabelName(label));
    if (!seen.insert(label).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("metric '", name, "' repeats label name '", label, "'"));
    }
  }
  for (const std::string& suffix : suffixes) {
    const std::string sample = absl::StrCat(name, suffix);
    if (claimed_.count(sample) > 0) {
      return absl::AlreadyExistsError(
          absl::StrCat("metric '", name, "': sample name '", sample, "' is already registered"));
    }
  }
  for (const std::string& suffix : suffixes) claimed_.insert(absl::StrCat(name, suffix));
  return absl::OkStatus();
}

absl::StatusOr<Family<Counter>*> Registry::AddCounter(absl::string_view name,
                                                      absl::string_view help,
                                                      std::vector<std::string> label_names) {
  if (!absl::EndsWith(name, "_total")) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid counter name '", name, "': counters must end in _total"));
  }
  absl::MutexLock lock(&mu_);
  SLUICE_RETURN_IF_ERROR(Claim(name, label_names, {""}));
  auto family = std::make_unique<Family<Counter>>(
      std::string(name), std::string(help), "counter", std::move(label_names),
      [] { return std::make_unique<Counter>(); });
  return Install(families_, std::move(family), name);
}

absl::StatusOr<Family<Gauge>*> Registry::AddGauge(absl::string_view name, absl::string_view help,
                                                  std::vector<std::string> label_names) {
  absl::MutexLock lock(&mu_);
  SLUICE_RETURN_IF_ERROR(Claim(name, label_names, {""}));
  auto family = std::make_unique<Family<Gauge>>(std::string(name), std::string(help), "gauge",
                                                std::move(label_names),
                                                [] { return std::make_unique<Gauge>(); });
  return Install(families_, std::move(family), name);
}

absl::StatusOr<Family<Histogram>*> Registry::AddHistogram(absl::string_view name,
                                                          absl::string_view help,
                                                          std::vector<std::string> label_names,
                                                          std::vector<double> bounds) {
  for (const std::string& label : label_names) {
    if (label == "le") {
      return absl::InvalidArgumentError(
          absl::StrCat("histogram '", name, "' may not use the reserved label name 'le'"));
    }
  }
  if (absl::Status s = ValidateBucketBounds(bounds); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("histogram '", name, "': ", s.message()));
  }
  absl::MutexLock lock(&mu_);
  SLUICE_RETURN_IF_ERROR(Claim(name, label_names, {"", "_bucket", "_sum", "_count"}));
  auto family = std::make_unique<Family<Histogram>>(
      std::string(name), std::string(help), "histogram", std::move(label_names),
      [bounds = std::move(bounds)] { return std::make_unique<Histogram>(bounds); });
  return Install(families_, std::move(family), name);
}

std::string Registry::Render() const {
  std::string out;
  absl::MutexLock lock(&mu_);
  for (const auto& [name, family] : families_) family->RenderTo(&out);
  return out;
}

}  // namespace sluice::runtime
