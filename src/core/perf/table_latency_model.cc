#include "core/perf/table_latency_model.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

#include "common/status.h"

namespace sluice::core {
namespace {

constexpr double kMinArg = 0.01;

absl::Status CheckPoint(const ProfilePoint& p) {
  common::InputLocation where{p.model, p.line};
  if (p.batch < 1)
    return common::InputError(where, "batch", "must be >= 1");
  if (!(p.sm_share > 0 && p.sm_share <= 1)) {
    return common::InputError(where, "sm_share", "must be in (0, 1]");
  }
  if (!(p.time_quota > 0 && p.time_quota <= 1)) {
    return common::InputError(where, "time_quota", "must be in (0, 1]");
  }
  if (!(p.latency_s > 0 && std::isfinite(p.latency_s))) {
    return common::InputError(where, "latency_s", "must be finite and > 0");
  }
  return absl::OkStatus();
}

template <typename T>
std::vector<T> SortedUnique(std::vector<T> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

template <typename T>
size_t IndexOf(const std::vector<T>& axis, T x) {
  return static_cast<size_t>(std::lower_bound(axis.begin(), axis.end(), x) - axis.begin());
}

// Lower bracket index and weight of `x` on an ascending axis; x is clamped to the axis.
std::pair<size_t, double> Bracket(const std::vector<double>& axis, double x) {
  if (axis.size() == 1 || x <= axis.front())
    return {0, 0.0};
  if (x >= axis.back())
    return {axis.size() - 2, 1.0};
  size_t i = static_cast<size_t>(std::upper_bound(axis.begin(), axis.end(), x) - axis.begin()) - 1;
  return {i, (x - axis[i]) / (axis[i + 1] - axis[i])};
}

// Least-squares non-increasing fit of v (pool adjacent violators).
void IsotonicNonIncreasing(std::vector<double>& v) {
  std::vector<double> mean;
  std::vector<int> count;
  for (double x : v) {
    mean.push_back(x);
    count.push_back(1);
    while (mean.size() > 1 && mean[mean.size() - 2] < mean.back()) {
      size_t k = mean.size() - 1;
      mean[k - 1] = (mean[k - 1] * count[k - 1] + mean[k] * count[k]) / (count[k - 1] + count[k]);
      count[k - 1] += count[k];
      mean.pop_back();
      count.pop_back();
    }
  }
  size_t out = 0;
  for (size_t k = 0; k < mean.size(); ++k) {
    for (int j = 0; j < count[k]; ++j)
      v[out++] = mean[k];
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<TableLatencyModel>> TableLatencyModel::Create(
    std::span<const ProfilePoint> points, const TableOptions& options) {
  if (points.empty())
    return absl::InvalidArgumentError("profile table has no points");
  std::vector<int> batches;
  std::vector<double> shares, quotas;
  for (const ProfilePoint& p : points) {
    SLUICE_RETURN_IF_ERROR(CheckPoint(p));
    batches.push_back(p.batch);
    shares.push_back(p.sm_share);
    quotas.push_back(p.time_quota);
  }
  std::unique_ptr<TableLatencyModel> m(new TableLatencyModel());
  m->options_ = options;
  m->batches_ = SortedUnique(std::move(batches));
  m->shares_ = SortedUnique(std::move(shares));
  m->quotas_ = SortedUnique(std::move(quotas));
  for (int b : m->batches_)
    m->log_batches_.push_back(std::log(static_cast<double>(b)));
  m->grid_.assign(m->batches_.size() * m->shares_.size() * m->quotas_.size(), 0.0);
  std::vector<int> count(m->grid_.size(), 0);
  for (const ProfilePoint& p : points) {
    size_t i = m->Index(IndexOf(m->batches_, p.batch), IndexOf(m->shares_, p.sm_share),
                        IndexOf(m->quotas_, p.time_quota));
    m->grid_[i] += p.latency_s;
    ++count[i];
  }
  std::vector<bool> present(m->grid_.size());
  for (size_t i = 0; i < m->grid_.size(); ++i) {
    present[i] = count[i] > 0;
    if (present[i])
      m->grid_[i] /= count[i];
  }
  m->Fill(present);
  m->EnforceMonotone();
  return m;
}

// Copies the nearest present cell along quota, then share, then batch, into missing cells.
void TableLatencyModel::Fill(const std::vector<bool>& present_in) {
  std::vector<bool> present = present_in;
  const size_t nb = batches_.size(), ns = shares_.size(), nq = quotas_.size();
  // Along axis `axis` (0 = batch, 1 = share, 2 = quota) with the other two fixed.
  auto fill_axis = [&](int axis) {
    const size_t len = axis == 0 ? nb : axis == 1 ? ns : nq;
    const size_t o1 = axis == 0 ? ns : nb, o2 = axis == 2 ? ns : nq;
    for (size_t a = 0; a < o1; ++a) {
      for (size_t c = 0; c < o2; ++c) {
        auto idx = [&](size_t k) {
          return axis == 0 ? Index(k, a, c) : axis == 1 ? Index(a, k, c) : Index(a, c, k);
        };
        std::vector<bool> was(len);
        for (size_t k = 0; k < len; ++k)
          was[k] = present[idx(k)];
        for (size_t k = 0; k < len; ++k) {
          if (was[k])
            continue;
          for (size_t d = 1; d < len; ++d) {
            size_t from = k >= d && was[k - d] ? k - d : k + d < len && was[k + d] ? k + d : len;
            if (from == len)
              continue;
            grid_[idx(k)] = grid_[idx(from)];
            present[idx(k)] = true;
            ++filled_cells_;
            break;
          }
        }
      }
    }
  };
  fill_axis(2);
  fill_axis(1);
  fill_axis(0);
}

void TableLatencyModel::EnforceMonotone() {
  const std::vector<double> before = grid_;
  const size_t nb = batches_.size(), ns = shares_.size(), nq = quotas_.size();
  std::vector<double> line;
  for (size_t b = 0; b < nb; ++b) {
    for (size_t q = 0; q < nq; ++q) {  // isotonic along share
      line.clear();
      for (size_t s = 0; s < ns; ++s)
        line.push_back(Cell(b, s, q));
      IsotonicNonIncreasing(line);
      for (size_t s = 0; s < ns; ++s)
        Cell(b, s, q) = line[s];
    }
    for (size_t s = 0; s < ns; ++s) {  // isotonic along quota
      line.clear();
      for (size_t q = 0; q < nq; ++q)
        line.push_back(Cell(b, s, q));
      IsotonicNonIncreasing(line);
      for (size_t q = 0; q < nq; ++q)
        Cell(b, s, q) = line[q];
    }
  }
  // Cumulative maxima make every axis monotone at once (each pass keeps the earlier ones).
  for (size_t b = 1; b < nb; ++b) {
    for (size_t s = 0; s < ns; ++s) {
      for (size_t q = 0; q < nq; ++q)
        Cell(b, s, q) = std::max(Cell(b, s, q), Cell(b - 1, s, q));
    }
  }
  for (size_t b = 0; b < nb; ++b) {
    for (size_t s = ns - 1; s-- > 0;) {
      for (size_t q = 0; q < nq; ++q)
        Cell(b, s, q) = std::max(Cell(b, s, q), Cell(b, s + 1, q));
    }
    for (size_t s = 0; s < ns; ++s) {
      for (size_t q = nq - 1; q-- > 0;)
        Cell(b, s, q) = std::max(Cell(b, s, q), Cell(b, s, q + 1));
    }
  }
  for (size_t i = 0; i < grid_.size(); ++i) {
    if (std::abs(grid_[i] - before[i]) > 1e-12 * before[i])
      ++adjusted_cells_;
  }
}

double TableLatencyModel::Interpolate(double log_batch, double share, double quota) const {
  auto [ib, wb] = Bracket(log_batches_, log_batch);
  auto [is, ws] = Bracket(shares_, share);
  auto [iq, wq] = Bracket(quotas_, quota);
  const size_t db = batches_.size() > 1, ds = shares_.size() > 1, dq = quotas_.size() > 1;
  double acc = 0;
  for (size_t x = 0; x < 2; ++x) {
    double fx = x ? wb : 1 - wb;
    if (fx == 0)
      continue;
    for (size_t y = 0; y < 2; ++y) {
      double fy = y ? ws : 1 - ws;
      if (fy == 0)
        continue;
      for (size_t z = 0; z < 2; ++z) {
        double fz = z ? wq : 1 - wq;
        if (fz == 0)
          continue;
        acc += fx * fy * fz * grid_[Index(ib + x * db, is + y * ds, iq + z * dq)];
      }
    }
  }
  return acc;
}

double TableLatencyModel::LatencySeconds(int batch, double sm_share, double time_quota) const {
  batch = std::max(batch, 1);
  double s = sm_share >= kMinArg ? std::min(sm_share, 1.0) : kMinArg;
  double q = time_quota >= kMinArg ? std::min(time_quota, 1.0) : kMinArg;
  double scale = 1.0;
  int b = batch;
  if (b > batches_.back()) {
    scale *= static_cast<double>(b) / batches_.back();
    b = batches_.back();
  }
  if (s < shares_.front()) {
    scale *= shares_.front() / s;
    s = shares_.front();
  }
  return scale * Interpolate(std::log(static_cast<double>(b)), s, q);
}

absl::Duration TableLatencyModel::BatchLatency(int batch, double sm_share,
                                               double time_quota) const {
  return absl::Seconds(LatencySeconds(batch, sm_share, time_quota));
}

absl::Duration TableLatencyModel::IterationTime(double sm_share) const {
  return absl::Seconds(options_.training_factor *
                       LatencySeconds(options_.training_batch, sm_share, 1.0));
}

absl::Duration TableLatencyModel::PrefillLatency(int prompt_tokens, double sm_share) const {
  if (options_.prefill_per_token_s <= 0)
    return absl::ZeroDuration();
  double s = sm_share >= kMinArg ? std::min(sm_share, 1.0) : kMinArg;
  return absl::Seconds(LatencySeconds(1, s, 1.0) +
                       std::max(prompt_tokens, 0) * options_.prefill_per_token_s / s);
}

}  // namespace sluice::core
