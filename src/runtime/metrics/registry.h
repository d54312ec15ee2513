// Prometheus metrics registry for the daemons (gateway, agent, controller): labelled families of
// counters, gauges and histograms, rendered as text exposition format 0.0.4 for `/metrics`.
// Thread safety: updates on a cell (Counter/Gauge/Histogram) are lock-free atomics; creating or
// looking up a family or a labelled series takes an absl::Mutex, so hot paths should look a series
// up once and keep the pointer. Render() takes the same mutexes and may run concurrently with all.
// Families and series live as long as the Registry; returned pointers stay valid until then.
#ifndef SLUICE_RUNTIME_METRICS_REGISTRY_H_
#define SLUICE_RUNTIME_METRICS_REGISTRY_H_

#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "runtime/metrics/exposition.h"
#include "runtime/metrics/metric.h"

namespace sluice::runtime {
namespace internal {

// Appends one series' sample lines. `labels` is the rendered `k="v",...` body (maybe empty).
void RenderSeries(const std::string& name, const std::string& labels, const Counter& cell,
                  std::string* out);
void RenderSeries(const std::string& name, const std::string& labels, const Gauge& cell,
                  std::string* out);
void RenderSeries(const std::string& name, const std::string& labels, const Histogram& cell,
                  std::string* out);

class FamilyBase {
 public:
  virtual ~FamilyBase() = default;
  // Appends HELP, TYPE and all series; appends nothing when the family has no series yet.
  virtual void RenderTo(std::string* out) const = 0;
};

}  // namespace internal

// All series of one metric name, keyed by label values (in the order of the label names).
template <typename T>
class Family final : public internal::FamilyBase {
 public:
  Family(std::string name, std::string help, const char* type,
         std::vector<std::string> label_names, absl::AnyInvocable<std::unique_ptr<T>() const> make)
      : name_(std::move(name)),
        header_(absl::StrCat("# HELP ", name_, " ", EscapeHelp(help), "\n# TYPE ", name_, " ",
                             type, "\n")),
        label_names_(std::move(label_names)),
        make_(std::move(make)) {}

  // The series for `label_values`, created at 0 on first use. InvalidArgument when the number of
  // values differs from the number of label names. Any byte string is a valid label value.
  absl::StatusOr<T*> WithLabels(const std::vector<std::string>& label_values) {
    if (label_values.size() != label_names_.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "metric '", name_, "' has ", label_names_.size(), " label(s), got ",
          label_values.size(), " value(s)"));
    }
    absl::MutexLock lock(&mu_);
    auto [it, inserted] = series_.try_emplace(label_values);
    if (inserted) {
      it->second.labels = RenderLabels(label_values);
      it->second.cell = make_();
    }
    return it->second.cell.get();
  }

  const std::vector<std::string>& label_names() const { return label_names_; }

  void RenderTo(std::string* out) const override {
    absl::MutexLock lock(&mu_);
    if (series_.empty()) return;
    out->append(header_);
    for (const auto& [values, series] : series_) {
      internal::RenderSeries(name_, series.labels, *series.cell, out);
    }
  }

 private:
  struct Series {
    std::string labels;
    std::unique_ptr<T> cell;
  };

  std::string RenderLabels(const std::vector<std::string>& values) const {
    std::string body;
    for (size_t i = 0; i < values.size(); ++i) {
      absl::StrAppend(&body, i == 0 ? "" : ",", label_names_[i], "=\"",
                      EscapeLabelValue(values[i]), "\"");
    }
    return body;
  }

  const std::string name_;
  const std::string header_;
  const std::vector<std::string> label_names_;
  const absl::AnyInvocable<std::unique_ptr<T>() const> make_;
  mutable absl::Mutex mu_;
  std::map<std::vector<std::string>, Series> series_ ABSL_GUARDED_BY(mu_);
};

// Owns metric families. Each Add* validates names and returns InvalidArgument naming the bad
// name, or AlreadyExists when the name (or a histogram's `_bucket`/`_sum`/`_count`) is taken.
// A family without labels gets its single series at creation: WithLabels({}) returns it.
class Registry {
 public:
  Registry() = default;
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // `name` must end in `_total`.
  absl::StatusOr<Family<Counter>*> AddCounter(absl::string_view name, absl::string_view help,
                                              std::vector<std::string> label_names);
  absl::StatusOr<Family<Gauge>*> AddGauge(absl::string_view name, absl::string_view help,
                                          std::vector<std::string> label_names);
  // `bounds` in base units (seconds for latency), finite and strictly increasing; `le` is not
  // allowed as a label name.
  absl::StatusOr<Family<Histogram>*> AddHistogram(absl::string_view name, absl::string_view help,
                                                  std::vector<std::string> label_names,
                                                  std::vector<double> bounds);

  // Text exposition format 0.0.4 (Content-Type `text/plain; version=0.0.4`): families sorted by
  // name, series sorted by label values.
  std::string Render() const;

 private:
  // Validates and claims the sample names `name` + each suffix.
  absl::Status Claim(absl::string_view name, const std::vector<std::string>& label_names,
                     const std::vector<std::string>& suffixes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  std::map<std::string, std::unique_ptr<internal::FamilyBase>> families_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> claimed_ ABSL_GUARDED_BY(mu_);
};

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_METRICS_REGISTRY_H_
