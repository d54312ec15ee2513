// Function groups (function_group.h): parse the group, parse each model entry once as an
// ordinary function (so every function field and check applies), then stamp out the fleet.
#include "sim/experiment/function_group.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

#include "common/status.h"
#include "sim/experiment/yaml_fields.h"
#include "sim/workload/longtail.h"
#include "sim/workload/random.h"

namespace sluice::sim::internal {
namespace {

constexpr int64_t kMaxGroupSize = 100000;

struct ModelEntry {
  double weight = 1;
  FunctionConfig config;  // the entry parsed as a function (name and workload placeholders)
};

// A function node from model entry `entry`: its keys minus `weight`, plus a placeholder name
// and workload. Values are shared with the document, so errors keep their lines.
absl::StatusOr<YAML::Node> TemplateNode(const StrictMap& entry) {
  for (absl::string_view k : {"name", "workload", "training"}) {
    if (entry.Has(k)) {
      return entry.ErrorAt(k, "not allowed in a function group's model entry (the group "
                              "names its functions and generates their arrivals)");
    }
  }
  YAML::Node t(YAML::NodeType::Map);
  for (const auto& kv : entry.node()) {
    if (kv.first.Scalar() != "weight")
      t.force_insert(kv.first, kv.second);
  }
  t.force_insert("name", "group-template");
  t.force_insert("workload", YAML::Load("{kind: poisson, rate_rps: 1}"));
  return t;
}

// ParseFunction names fields from "functions[index]"; a model entry's live deeper.
absl::Status Reprefix(absl::Status s, int index, const std::string& entry_field) {
  if (s.ok())
    return s;
  const std::string from = absl::StrCat("'functions[", index, "]");
  std::string m(s.message());
  m = absl::StrReplaceAll(m, {{from + ".", absl::StrCat("'", entry_field, ".")},
                              {from + "'", absl::StrCat("'", entry_field, "'")}});
  return absl::InvalidArgumentError(m);
}

absl::StatusOr<std::vector<ModelEntry>> ParseModels(const StrictMap& g, int index,
                                                    const LoadContext& ctx) {
  const YAML::Node list = g.Get("models");
  if (!g.Has("models") || !list.IsSequence() || list.size() == 0)
    return g.ErrorAt("models", "must be a non-empty list of model entries");
  std::vector<ModelEntry> models;
  int j = 0;
  for (const YAML::Node& item : list) {
    const std::string field = absl::StrCat(g.FieldOf("models"), "[", j++, "]");
    if (!item.IsMap())
      return YamlError(ctx.file, item, field, "must be a map such as {model: resnet50}");
    SLUICE_ASSIGN_OR_RETURN(StrictMap entry,
                            StrictMap::Create(item, ctx.file, field,
                                              {"weight", "name", "model", "kind", "slo_ms",
                                               "batching", "quota", "memory_gib", "gpus",
                                               "instances", "capacity_rps", "service", "tokens",
                                               "workload", "training"}));
    ModelEntry m;
    SLUICE_ASSIGN_OR_RETURN(m.weight, entry.Double("weight", Range::kPositive, 1.0));
    SLUICE_ASSIGN_OR_RETURN(const YAML::Node t, TemplateNode(entry));
    absl::StatusOr<ParsedFunction> f = ParseFunction(t, index, ctx);
    if (!f.ok())
      return Reprefix(f.status(), index, field);
    if (f->config.kind == core::FunctionKind::kTraining)
      return entry.ErrorAt("model", "a function group holds inference functions only");
    m.config = std::move(f->config);
    models.push_back(std::move(m));
  }
  return models;
}

absl::StatusOr<LongTailFleetOptions> ParseFleetOptions(const StrictMap& g) {
  LongTailFleetOptions o;
  SLUICE_ASSIGN_OR_RETURN(o.rate_scale, g.Double("rate_scale", Range::kPositive, o.rate_scale));
  SLUICE_ASSIGN_OR_RETURN(o.max_diurnal_amplitude,
                          g.Double("diurnal_amplitude", Range::kNonNegative,
                                   o.max_diurnal_amplitude));
  if (o.max_diurnal_amplitude >= 1)
    return g.ErrorAt("diurnal_amplitude", "must be < 1");
  SLUICE_ASSIGN_OR_RETURN(const double peak_h, g.Double("diurnal_peak_h", Range::kNonNegative,
                                                        absl::ToDoubleHours(o.diurnal_peak)));
  if (peak_h >= 24)
    return g.ErrorAt("diurnal_peak_h", "must be < 24");
  o.diurnal_peak = absl::Hours(peak_h);
  return o;
}

// Index of the model entry for a uniform draw u in [0, 1).
size_t PickModel(const std::vector<ModelEntry>& models, double total, double u) {
  double x = u * total;
  for (size_t j = 0; j < models.size(); ++j) {
    if (x < models[j].weight)
      return j;
    x -= models[j].weight;
  }
  return models.size() - 1;
}

}  // namespace

bool IsFunctionGroup(const YAML::Node& item) {
  return item.IsMap() && item["function_group"].IsDefined();
}

absl::StatusOr<std::vector<ParsedFunction>> ParseFunctionGroup(const YAML::Node& item, int index,
                                                               const LoadContext& ctx,
                                                               uint64_t experiment_seed) {
  const std::string field = absl::StrCat("functions[", index, "]");
  SLUICE_ASSIGN_OR_RETURN(StrictMap outer,
                          StrictMap::Create(item, ctx.file, field, {"function_group"}));
  SLUICE_ASSIGN_OR_RETURN(
      StrictMap g, StrictMap::Create(outer.Get("function_group"), ctx.file,
                                     outer.FieldOf("function_group"),
                                     {"name", "count", "seed", "rate_scale", "diurnal_amplitude",
                                      "diurnal_peak_h", "models"}));
  SLUICE_ASSIGN_OR_RETURN(const std::string name, g.Name("name", std::nullopt));
  SLUICE_ASSIGN_OR_RETURN(const int64_t count, g.Int("count", Range::kPositive, std::nullopt));
  if (count > kMaxGroupSize)
    return g.ErrorAt("count", absl::StrCat("must be <= ", kMaxGroupSize));
  const int width = static_cast<int>(absl::StrCat(count - 1).size());
  if (!IsValidName(absl::StrCat(name, "-", std::string(width, '0'))))
    return g.ErrorAt("name", absl::StrCat("too long: '", name, "-<", width, " digits>' must be "
                                          "a valid name of at most 64 characters"));
  SLUICE_ASSIGN_OR_RETURN(const int64_t seed,
                          g.Int("seed", Range::kNonNegative,
                                static_cast<int64_t>(experiment_seed)));
  SLUICE_ASSIGN_OR_RETURN(const LongTailFleetOptions options, ParseFleetOptions(g));
  SLUICE_ASSIGN_OR_RETURN(const std::vector<ModelEntry> models, ParseModels(g, index, ctx));
  absl::StatusOr<std::vector<LongTailArrivals>> fleet =
      GenerateLongTailFleet(static_cast<int>(count), static_cast<uint64_t>(seed), options);
  if (!fleet.ok())
    return g.ErrorAt("count", fleet.status().message());
  double total = 0;
  for (const ModelEntry& m : models)
    total += m.weight;
  std::vector<ParsedFunction> out;
  out.reserve(count);
  for (int64_t k = 0; k < count; ++k) {
    Rng rng(DeriveSeed(static_cast<uint64_t>(seed), (uint64_t{1} << 40) + k));
    FunctionConfig fc = models[PickModel(models, total, rng.Uniform())].config;
    std::string digits = absl::StrCat(k);
    fc.name = absl::StrCat(name, "-", std::string(width - digits.size(), '0'), digits);
    fc.workload.kind = WorkloadKind::kLongTail;
    fc.workload.longtail = (*fleet)[k];
    fc.workload.source_file = ctx.file;
    fc.workload.source_line = YamlLine(outer.Get("function_group"));
    out.push_back({std::move(fc), std::nullopt});
  }
  return out;
}

}  // namespace sluice::sim::internal
