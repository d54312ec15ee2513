#include "core/perf/perf_model.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace sluice::core {

PerfModel::PerfModel() : kappa_(kDefaultInterferenceKappa) {}

std::string PerfModel::CanonicalName(absl::string_view name) {
  std::string s = absl::AsciiStrToLower(absl::StripAsciiWhitespace(name));
  std::replace(s.begin(), s.end(), '_', '-');
  return s;
}

absl::StatusOr<const ModelEntry*> PerfModel::Find(absl::string_view name) const {
  auto it = models_.find(CanonicalName(name));
  if (it != models_.end())
    return &it->second->entry;
  return absl::NotFoundError(
      absl::StrCat("unknown model '", name, "'; known models: ", absl::StrJoin(names(), ", ")));
}

absl::Status PerfModel::Add(ModelInfo info, std::unique_ptr<LatencyModel> model) {
  info.name = CanonicalName(info.name);
  if (info.name.empty())
    return absl::InvalidArgumentError("model name must not be empty");
  if (model == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("model '", info.name, "': no latency model"));
  }
  if (info.training_batch < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("model '", info.name, "': training_batch must be >= 1"));
  }
  if (info.param_bytes.count() < 0 || info.gpu_memory.count() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("model '", info.name, "': byte sizes must be >= 0"));
  }
  auto slot = std::make_unique<Slot>();
  slot->model = std::move(model);
  slot->entry = ModelEntry{std::move(info), slot->model.get()};
  std::string key = slot->entry.info.name;
  models_[key] = std::move(slot);
  return absl::OkStatus();
}

std::vector<std::string> PerfModel::names() const {
  std::vector<std::string> out;
  out.reserve(models_.size());
  for (const auto& [name, slot] : models_)
    out.push_back(name);
  std::sort(out.begin(), out.end());
  return out;
}

double PerfModel::InterferenceSlowdown(double co_runner_share) const {
  double c = co_runner_share > 0 ? std::min(co_runner_share, 1.0) : 0.0;  // NaN -> 0
  return 1.0 + kappa_ * c;
}

void PerfModel::set_interference_kappa(double k) {
  kappa_ = k > 0 ? k : 0.0;
}

}  // namespace sluice::core
