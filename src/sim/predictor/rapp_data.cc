#include "sim/predictor/rapp_data.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <memory>

#include "absl/container/btree_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include "common/units.h"
#include "sim/workload/file_io.h"

namespace sluice::sim {
namespace {

constexpr absl::string_view kRelative =
    "rapp-hasgpu-v100-sm-quota-profiles/rapp_latency_sm_quota_batch.csv";

bool SameModel(absl::string_view a, absl::string_view b) {
  return core::PerfModel::CanonicalName(a) == core::PerfModel::CanonicalName(b);
}

// The `rapp/<name>` tokens of `text` (name: letters, digits, '_', '-', '.').
absl::btree_set<std::string> RappNames(absl::string_view text) {
  absl::btree_set<std::string> names;
  for (size_t at = text.find(kRappPrefix); at != absl::string_view::npos;
       at = text.find(kRappPrefix, at + 1)) {
    const size_t start = at + kRappPrefix.size();
    size_t end = start;
    while (end < text.size() && (std::isalnum(static_cast<unsigned char>(text[end])) ||
                                 text[end] == '_' || text[end] == '-' || text[end] == '.'))
      ++end;
    if (end > start)
      names.insert(std::string(text.substr(start, end - start)));
  }
  return names;
}

}  // namespace

std::string RappDataPath() {
  std::string dir = "../shared/data";
  if (const char* d = std::getenv("SLUICE_DATA_DIR"))
    dir = d;
  else if (const char* s = std::getenv("SLUICE_SOURCE_DIR"))
    dir = absl::StrCat(s, "/../shared/data");
  return absl::StrCat(dir, "/", kRelative);
}

absl::StatusOr<std::vector<core::ProfilePoint>> LoadRappProfiles() {
  const std::string path = RappDataPath();
  absl::StatusOr<std::string> text = ReadFileMaybeXz(path);
  if (!text.ok()) {
    return absl::NotFoundError(absl::StrCat("the RaPP profile table is needed: ",
                                            text.status().message(),
                                            " (set SLUICE_DATA_DIR to the shared data folder)"));
  }
  return core::ParseRappProfiles(*text, path);
}

std::vector<core::ProfilePoint> PointsOf(const std::vector<core::ProfilePoint>& all,
                                         absl::string_view model) {
  std::vector<core::ProfilePoint> out;
  for (const core::ProfilePoint& p : all) {
    if (SameModel(p.model, model))
      out.push_back(p);
  }
  return out;
}

std::vector<core::ProfilePoint> PointsExcept(const std::vector<core::ProfilePoint>& all,
                                             absl::string_view model) {
  std::vector<core::ProfilePoint> out;
  for (const core::ProfilePoint& p : all) {
    if (!SameModel(p.model, model))
      out.push_back(p);
  }
  return out;
}

std::vector<std::string> ModelNames(const std::vector<core::ProfilePoint>& all) {
  absl::btree_set<std::string> names;
  for (const core::ProfilePoint& p : all)
    names.insert(p.model);
  return {names.begin(), names.end()};
}

absl::StatusOr<core::CalibratedPredictor> PredictorFor(const std::vector<core::ProfilePoint>& all,
                                                       absl::string_view model) {
  std::vector<core::ProfilePoint> own = PointsOf(all, model);
  if (own.empty()) {
    std::vector<std::string> names = ModelNames(all);
    names.resize(std::min<size_t>(names.size(), 8));
    return absl::NotFoundError(absl::StrCat("model: '", model, "' is not in the RaPP table (",
                                            ModelNames(all).size(), " models, e.g. ",
                                            absl::StrJoin(names, ", "), ")"));
  }
  absl::StatusOr<core::LatencyPredictor> lp =
      core::LatencyPredictor::Train(PointsExcept(all, model));
  if (!lp.ok())
    return lp.status();
  return lp->Calibrate(own);
}

absl::Status AddRappModelsNamedIn(absl::string_view text, core::PerfModel& perf) {
  absl::btree_set<std::string> names = RappNames(text);
  if (names.empty())
    return absl::OkStatus();
  absl::StatusOr<std::vector<core::ProfilePoint>> all = LoadRappProfiles();
  if (!all.ok())
    return all.status();
  for (const std::string& name : names) {
    absl::StatusOr<core::CalibratedPredictor> cp = PredictorFor(*all, name);
    if (!cp.ok())
      return cp.status();
    core::ModelInfo info;
    info.name = absl::StrCat(kRappPrefix, name);
    // The table has no sizes; torchvision CNNs are 5-850 MB of fp32 weights.
    info.param_bytes = common::Bytes::MiB(200);
    info.gpu_memory = common::Bytes::GiB(2);
    if (absl::Status s = perf.Add(std::move(info),
                                  std::make_unique<core::PredictorLatencyModel>(*std::move(cp)));
        !s.ok())
      return s;
  }
  return absl::OkStatus();
}

}  // namespace sluice::sim
