// StageConfigFromEnv and RunStageBatch of the pipeline-stage example (stage.h).
#include "stage.h"

#include <algorithm>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/status.h"
#include "core/perf/perf_model.h"
#include "core/perf/pipeline_profile.h"

namespace sluice::examples {
namespace {

using nlohmann::json;

// The value of `key` for stage `index`: one number for every stage, or a list of `count`.
absl::StatusOr<double> PerStage(const std::map<std::string, std::string>& env,
                                const std::string& key, double fallback, int index, int count) {
  auto it = env.find(key);
  if (it == env.end() || it->second.empty())
    return fallback;
  const std::vector<absl::string_view> parts = absl::StrSplit(it->second, ',');
  if (parts.size() != 1 && static_cast<int>(parts.size()) != count) {
    return absl::InvalidArgumentError(absl::StrCat(key, ": ", parts.size(), " values for ", count,
                                                   " stages (give one, or one per stage)"));
  }
  double v = 0;
  const absl::string_view part = parts.size() == 1 ? parts[0] : parts[index];
  if (!absl::SimpleAtod(part, &v) || v < 0)
    return absl::InvalidArgumentError(absl::StrCat(key, ": '", part, "' is not a number >= 0"));
  return v;
}

absl::StatusOr<int> IntVar(const std::map<std::string, std::string>& env, const std::string& key,
                           int fallback) {
  auto it = env.find(key);
  if (it == env.end())
    return fallback;
  int v = 0;
  if (!absl::SimpleAtoi(it->second, &v))
    return absl::InvalidArgumentError(absl::StrCat(key, ": '", it->second, "' is not an integer"));
  return v;
}

// Bytes of the request's first input: a BYTES tensor's strings, else 4 bytes per element.
int64_t InputBytes(const json& input) {
  int64_t bytes = 0;
  const json& data = input.value("data", json::array());
  if (!data.is_array())
    return 0;
  for (const json& d : data)
    bytes += d.is_string() ? static_cast<int64_t>(d.get_ref<const std::string&>().size()) : 4;
  return bytes;
}

std::string TraceOf(const json& inputs) {
  for (const json& in : inputs) {
    if (in.value("name", "") == "trace" && in.contains("data") && in["data"].is_array() &&
        !in["data"].empty() && in["data"][0].is_string())
      return in["data"][0].get<std::string>();
  }
  return "";
}

// PIPELINE_MODEL's stage `index` of `count` from core/perf/pipeline_profile: the batch time as
// base + per_item x b, the two fitted through the stage's latency model at batches 1 and 2 (a
// whole GPU), and the activation bytes it hands on (the last stage: 1, the reply's minimum).
absl::Status ApplyProfile(const std::string& model, StageConfig& c) {
  core::PerfModel perf;
  if (absl::Status s = core::AddPipelineStages(perf, model, c.count, "SLUICE_STAGE_COUNT");
      !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("PIPELINE_MODEL: ", s.message()));
  }
  const std::vector<core::StageProfile> stages =
      *core::SplitPipeline(model, c.count, "SLUICE_STAGE_COUNT");
  const core::StageProfile& stage = stages[c.index];
  const core::LatencyModel* latency = (*perf.Find(stage.model_key))->latency;
  const absl::Duration one = latency->BatchLatency(1, 1.0, 1.0);
  const absl::Duration two = latency->BatchLatency(2, 1.0, 1.0);
  c.per_item = std::max(absl::ZeroDuration(), two - one);
  c.base = one - c.per_item;
  c.activation_bytes = std::max<int64_t>(1, stage.activation_out.count());
  c.profile_model = stage.model_key;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<StageConfig> StageConfigFromEnv(const std::map<std::string, std::string>& env) {
  StageConfig c;
  absl::StatusOr<int> count = IntVar(env, "SLUICE_STAGE_COUNT", 1);
  absl::StatusOr<int> index = IntVar(env, "SLUICE_STAGE_INDEX", 0);
  if (!count.ok() || !index.ok())
    return count.ok() ? index.status() : count.status();
  if (*count < 1 || *index < 0 || *index >= *count) {
    return absl::InvalidArgumentError(absl::StrCat(
        "SLUICE_STAGE_INDEX ", *index, " is not a stage of SLUICE_STAGE_COUNT ", *count));
  }
  c.index = *index;
  c.count = *count;
  // PIPELINE_MODEL gives the defaults; an explicit STAGE_MS / STAGE_MS_PER_ITEM /
  // ACTIVATION_BYTES still wins (a test shrinks megabyte activations this way).
  if (auto it = env.find("PIPELINE_MODEL"); it != env.end() && !it->second.empty()) {
    SLUICE_RETURN_IF_ERROR(ApplyProfile(it->second, c));
  }
  const double base_ms = absl::ToDoubleMilliseconds(c.base);
  const double per_item_ms = absl::ToDoubleMilliseconds(c.per_item);
  absl::StatusOr<double> base = PerStage(env, "STAGE_MS", base_ms, c.index, c.count);
  absl::StatusOr<double> per_item =
      PerStage(env, "STAGE_MS_PER_ITEM", per_item_ms, c.index, c.count);
  absl::StatusOr<double> bytes = PerStage(env, "ACTIVATION_BYTES",
                                          static_cast<double>(c.activation_bytes), c.index,
                                          c.count);
  for (const absl::StatusOr<double>* v : {&base, &per_item, &bytes}) {
    if (!v->ok())
      return v->status();
  }
  if (*bytes < 1)
    return absl::InvalidArgumentError("ACTIVATION_BYTES: must be >= 1");
  c.base = absl::Microseconds(*base * 1000);
  c.per_item = absl::Microseconds(*per_item * 1000);
  c.activation_bytes = static_cast<int64_t>(*bytes);
  return c;
}

std::vector<runtime::InferResult> RunStageBatch(const StageConfig& config,
                                                std::span<const runtime::InferRequest> batch,
                                                const std::function<void(absl::Duration)>& spend) {
  spend(config.BatchTime(static_cast<int64_t>(batch.size())));
  std::vector<runtime::InferResult> out;
  out.reserve(batch.size());
  const std::string activations(static_cast<size_t>(config.activation_bytes), 'a' + config.index);
  for (const runtime::InferRequest& r : batch) {
    const json& inputs = r.body.value("inputs", json());
    if (!inputs.is_array() || inputs.empty()) {
      out.push_back(runtime::InferResult::Error("field 'inputs': a non-empty list is required"));
      continue;
    }
    std::string trace = TraceOf(inputs);
    absl::StrAppend(&trace, trace.empty() ? "" : ",", "s", config.index, ":",
                    InputBytes(inputs[0]));
    json outputs = json::array();
    outputs.push_back(
        {{"name", "activations"}, {"datatype", "BYTES"}, {"shape", {1}}, {"data", {activations}}});
    outputs.push_back(
        {{"name", "trace"}, {"datatype", "BYTES"}, {"shape", {1}}, {"data", {trace}}});
    out.push_back(runtime::InferResult::Ok(
        runtime::InferResponse(absl::StrCat("stage-", config.index), r.id, std::move(outputs))));
  }
  return out;
}

}  // namespace sluice::examples
