// Follows the generator's structure step by step (build the three populations, shuffle, start one
// per second, sample the deletes, stable-sort by time) so that its shape carries over; only the
// random stream differs.
#include "sim/placement/synthetic_instances.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

#include "common/status.h"
#include "sim/workload/random.h"

namespace sluice::sim {
namespace {

constexpr int kMaxCount = 1000000;
// 2024-06-19 15:44:30 UTC, the first start of the shipped instances-3200 list.
constexpr int64_t kStartUnixSeconds = 1718811870;

class Draws {
 public:
  explicit Draws(uint64_t seed) : rng_(SplitMix64(seed)) {}
  double Uniform(double lo, double hi) { return lo + (hi - lo) * rng_.Uniform(); }
  // Uniform integer in [lo, hi].
  int Int(int lo, int hi) {
    const int n = hi - lo + 1;
    return lo + std::min(n - 1, static_cast<int>(rng_.Uniform() * n));
  }
  static double Round2(double x) { return std::round(x * 100.0) / 100.0; }

  std::string Name(absl::string_view prefix, absl::flat_hash_set<std::string>& used) {
    static constexpr char kAlphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
    while (true) {
      std::string name = absl::StrCat(prefix, "-");
      for (int i = 0; i < 6; ++i)
        name.push_back(kAlphabet[Int(0, 35)]);
      if (used.insert(name).second)
        return name;
    }
  }

  template <typename T>
  void Shuffle(std::vector<T>& v) {
    for (size_t i = v.size(); i > 1; --i)
      std::swap(v[i - 1], v[Int(0, static_cast<int>(i) - 1)]);
  }
  // `k` distinct elements of `v`, in draw order (partial Fisher-Yates).
  std::vector<int> Sample(std::vector<int> v, int k) {
    k = std::min<int>(k, static_cast<int>(v.size()));
    for (int i = 0; i < k; ++i)
      std::swap(v[i], v[Int(i, static_cast<int>(v.size()) - 1)]);
    v.resize(k);
    return v;
  }

 private:
  Rng rng_;
};

InstanceSpec Training(Draws& d, absl::flat_hash_set<std::string>& used) {
  InstanceSpec s{d.Name("training", used), core::FunctionKind::kTraining};
  s.gpus = d.Int(0, 1) == 0 ? 2 : 4;
  s.memory_gib = 25 + 5 * d.Int(0, 3);
  s.sm_request = Draws::Round2(d.Uniform(0.4, 0.8));
  s.sm_limit = std::min(1.0, std::max(s.sm_request + 0.2, Draws::Round2(d.Uniform(0.6, 1.0))));
  return s;
}

InstanceSpec Inference(Draws& d, absl::flat_hash_set<std::string>& used) {
  InstanceSpec s{d.Name("inference", used), core::FunctionKind::kInference};
  s.memory_gib = d.Int(3, 10);
  s.sm_request = Draws::Round2(d.Uniform(0.2, 0.4));
  s.sm_limit = std::max(s.sm_request + 0.2, Draws::Round2(d.Uniform(0.3, 0.6)));
  return s;
}

InstanceSpec Llm(Draws& d, absl::flat_hash_set<std::string>& used) {
  InstanceSpec s{d.Name("llm-inference", used), core::FunctionKind::kLlmInference};
  s.memory_gib = d.Int(20, 30);
  s.sm_request = Draws::Round2(d.Uniform(0.4, 0.6));
  s.sm_limit = Draws::Round2(d.Uniform(s.sm_request + 0.2, std::min(s.sm_request + 0.99, 0.8)));
  return s;
}

// Appends a delete `delay` after each sampled start.
void AddDeletes(const std::vector<int>& picked, Draws& d, int lo_min, int hi_min,
                std::vector<PlacementEvent>& events) {
  for (int i : picked) {
    PlacementEvent e = events[i];
    e.action = InstanceAction::kDelete;
    e.time += absl::Minutes(d.Int(lo_min, hi_min));
    events.push_back(std::move(e));
  }
}

}  // namespace

absl::StatusOr<std::vector<PlacementEvent>> GenerateSyntheticInstances(
    const SyntheticInstancesConfig& config) {
  if (config.count < 1 || config.count > kMaxCount) {
    return absl::InvalidArgumentError(
        absl::StrCat("synthetic instance count must be in [1, 1000000], got ", config.count));
  }
  Draws d(config.seed);
  absl::flat_hash_set<std::string> used;
  const int llm = static_cast<int>(config.count * 0.2);
  const int training = static_cast<int>(config.count * 0.2);
  std::vector<InstanceSpec> specs;
  for (int i = 0; i < training; ++i)
    specs.push_back(Training(d, used));
  for (int i = 0; i < config.count - training - llm; ++i)
    specs.push_back(Inference(d, used));
  for (int i = 0; i < llm; ++i)
    specs.push_back(Llm(d, used));
  d.Shuffle(specs);

  std::vector<PlacementEvent> events;
  std::vector<int> servable, trainable;
  const absl::Time start = absl::FromUnixSeconds(kStartUnixSeconds);
  for (size_t i = 0; i < specs.size(); ++i) {
    const bool is_training = specs[i].kind == core::FunctionKind::kTraining;
    (is_training ? trainable : servable).push_back(static_cast<int>(i));
    events.push_back({start + absl::Seconds(i), InstanceAction::kStart, std::move(specs[i]), 0});
  }
  AddDeletes(d.Sample(servable, static_cast<int>(config.count * 0.6)), d, 1, 3, events);
  AddDeletes(d.Sample(trainable, static_cast<int>(config.count * 0.1)), d, 10, 15, events);
  SLUICE_RETURN_IF_ERROR(OrderAndCheckEvents(events, "<synthetic>"));
  return events;
}

}  // namespace sluice::sim
