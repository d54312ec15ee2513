// Line-by-line: each line is parsed as a Python literal, then its fields are checked one by one so
// that an error names the exact field.
#include "sim/placement/instance_list.h"

#include <algorithm>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

#include "common/status.h"
#include "sim/placement/py_literal.h"
#include "sim/workload/file_io.h"
#include "sim/workload/text_lines.h"

namespace sluice::sim {
namespace {

constexpr int kMaxGpusPerInstance = 64;
constexpr double kMaxMemoryGib = 1e6;

struct LineContext {
  const std::string& file;
  int line;
  absl::Status Error(absl::string_view field, absl::string_view message) const {
    return common::InputError({file, line}, field, message);
  }
};

// Checks that `dict` has exactly the keys in `keys`; `prefix` is the dict's field path.
absl::Status CheckKeys(const PyDict& dict, std::initializer_list<absl::string_view> keys,
                       absl::string_view prefix, const LineContext& ctx) {
  for (const std::string& k : dict.keys) {
    if (std::find(keys.begin(), keys.end(), k) == keys.end()) {
      return ctx.Error(absl::StrCat(prefix, k), "unknown field");
    }
  }
  for (absl::string_view k : keys) {
    if (dict.Find(k) == nullptr)
      return ctx.Error(absl::StrCat(prefix, k), "missing field");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> StringField(const PyDict& d, absl::string_view key,
                                        absl::string_view field, const LineContext& ctx) {
  const PyValue* v = d.Find(key);
  if (!v->is_string()) {
    return ctx.Error(field, absl::StrCat("must be a string, got ", v->TypeName()));
  }
  return v->AsString();
}

absl::StatusOr<double> ShareField(const PyDict& d, absl::string_view key, absl::string_view field,
                                  const LineContext& ctx) {
  const PyValue* v = d.Find(key);
  if (!v->is_number()) {
    return ctx.Error(field, absl::StrCat("must be a number, got ", v->TypeName()));
  }
  const double x = v->AsNumber();
  if (!(x > 0 && x <= 1))
    return ctx.Error(field, absl::StrCat("must be in (0, 1], got ", x));
  return x;
}

absl::StatusOr<core::FunctionKind> ParseKind(absl::string_view name, const LineContext& ctx) {
  if (name == "training")
    return core::FunctionKind::kTraining;
  if (name == "inference")
    return core::FunctionKind::kInference;
  if (name == "llm-inference")
    return core::FunctionKind::kLlmInference;
  return ctx.Error("Instance.type",
                   absl::StrCat("unknown type '", name, "' (training, inference, llm-inference)"));
}

absl::StatusOr<double> ParseMemory(const PyDict& d, int gpus, const LineContext& ctx) {
  const PyValue* v = d.Find("memory");
  if (!v->is_list()) {
    return ctx.Error("Instance.memory", absl::StrCat("must be a list, got ", v->TypeName()));
  }
  const PyList& list = v->AsList();
  if (static_cast<int>(list.size()) != gpus) {
    return ctx.Error("Instance.memory",
                     absl::StrCat("has ", list.size(), " entries but gpu_num is ", gpus,
                                  " (one GiB figure per GPU)"));
  }
  double first = 0;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string field = absl::StrCat("Instance.memory[", i, "]");
    if (!list[i].is_number()) {
      return ctx.Error(field, absl::StrCat("must be a number, got ", list[i].TypeName()));
    }
    const double m = list[i].AsNumber();
    if (!(m > 0 && m <= kMaxMemoryGib)) {
      return ctx.Error(field, absl::StrCat("must be in (0, 1e6] GiB, got ", m));
    }
    if (i == 0)
      first = m;
    if (m != first) {
      return ctx.Error(field, absl::StrCat("differs from memory[0] (", first, " vs ", m,
                                           "); unequal per-GPU memory is not supported"));
    }
  }
  return first;
}

absl::StatusOr<InstanceSpec> ParseInstance(const PyValue& v, const LineContext& ctx) {
  if (!v.is_dict())
    return ctx.Error("Instance", absl::StrCat("must be a dict, got ", v.TypeName()));
  const PyDict& d = v.AsDict();
  SLUICE_RETURN_IF_ERROR(
      CheckKeys(d, {"service_name", "type", "gpu_num", "sm_requests", "sm_limits", "memory"},
                "Instance.", ctx));
  InstanceSpec spec;
  SLUICE_ASSIGN_OR_RETURN(spec.service_name,
                          StringField(d, "service_name", "Instance.service_name", ctx));
  if (spec.service_name.empty())
    return ctx.Error("Instance.service_name", "must not be empty");
  SLUICE_ASSIGN_OR_RETURN(const std::string type, StringField(d, "type", "Instance.type", ctx));
  SLUICE_ASSIGN_OR_RETURN(spec.kind, ParseKind(type, ctx));
  const PyValue* gpus = d.Find("gpu_num");
  if (!gpus->is_int() || gpus->AsInt() < 1 || gpus->AsInt() > kMaxGpusPerInstance) {
    return ctx.Error("Instance.gpu_num", "must be an integer in [1, 64]");
  }
  spec.gpus = static_cast<int>(gpus->AsInt());
  SLUICE_ASSIGN_OR_RETURN(spec.sm_request,
                          ShareField(d, "sm_requests", "Instance.sm_requests", ctx));
  SLUICE_ASSIGN_OR_RETURN(spec.sm_limit, ShareField(d, "sm_limits", "Instance.sm_limits", ctx));
  if (spec.sm_request > spec.sm_limit) {
    return ctx.Error("Instance.sm_limits", absl::StrCat("must be >= sm_requests (", spec.sm_request,
                                                        "), got ", spec.sm_limit));
  }
  SLUICE_ASSIGN_OR_RETURN(spec.memory_gib, ParseMemory(d, spec.gpus, ctx));
  return spec;
}

absl::StatusOr<PlacementEvent> ParseEventLine(absl::string_view text, const LineContext& ctx) {
  absl::StatusOr<PyValue> literal = ParsePyLiteral(text);
  if (!literal.ok())
    return ctx.Error("", literal.status().message());
  if (!literal->is_dict()) {
    return ctx.Error("", absl::StrCat("each line must be a dict, got ", literal->TypeName()));
  }
  const PyDict& d = literal->AsDict();
  SLUICE_RETURN_IF_ERROR(CheckKeys(d, {"Time", "Action", "Instance"}, "", ctx));
  PlacementEvent event;
  event.line = ctx.line;
  SLUICE_ASSIGN_OR_RETURN(const std::string time, StringField(d, "Time", "Time", ctx));
  std::optional<absl::Time> t = ParseWallClock(time);
  if (!t)
    return ctx.Error("Time", absl::StrCat("expected 'YYYY-mm-dd HH:MM:SS', got '", time, "'"));
  event.time = *t;
  SLUICE_ASSIGN_OR_RETURN(const std::string action, StringField(d, "Action", "Action", ctx));
  if (action == "start") {
    event.action = InstanceAction::kStart;
  } else if (action == "delete") {
    event.action = InstanceAction::kDelete;
  } else {
    return ctx.Error("Action", absl::StrCat("must be 'start' or 'delete', got '", action, "'"));
  }
  SLUICE_ASSIGN_OR_RETURN(event.instance, ParseInstance(*d.Find("Instance"), ctx));
  return event;
}

}  // namespace

absl::StatusOr<std::vector<PlacementEvent>> ParseInstanceList(absl::string_view contents,
                                                              const std::string& file) {
  std::vector<PlacementEvent> events;
  LineCursor cursor(contents);
  while (std::optional<absl::string_view> line = cursor.Next()) {
    if (absl::StripAsciiWhitespace(*line).empty())
      continue;
    SLUICE_ASSIGN_OR_RETURN(PlacementEvent e, ParseEventLine(*line, {file, cursor.line()}));
    events.push_back(std::move(e));
  }
  return events;
}

absl::Status OrderAndCheckEvents(std::vector<PlacementEvent>& events, const std::string& file) {
  std::stable_sort(
      events.begin(), events.end(),
      [](const PlacementEvent& a, const PlacementEvent& b) { return a.time < b.time; });
  absl::flat_hash_set<std::string> live;
  for (const PlacementEvent& e : events) {
    const std::string& name = e.instance.service_name;
    if (e.action == InstanceAction::kStart && !live.insert(name).second) {
      return common::InputError({file, e.line}, "Instance.service_name",
                                absl::StrCat("'", name, "' starts again while still running"));
    }
    if (e.action == InstanceAction::kDelete && live.erase(name) == 0) {
      return common::InputError({file, e.line}, "Instance.service_name",
                                absl::StrCat("delete of '", name, "', which is not running"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<PlacementEvent>> LoadInstanceList(const std::string& path) {
  SLUICE_ASSIGN_OR_RETURN(const std::string contents, ReadFileMaybeXz(path));
  SLUICE_ASSIGN_OR_RETURN(std::vector<PlacementEvent> events, ParseInstanceList(contents, path));
  SLUICE_RETURN_IF_ERROR(OrderAndCheckEvents(events, path));
  return events;
}

absl::string_view InstanceKindName(core::FunctionKind kind) {
  switch (kind) {
    case core::FunctionKind::kTraining:
      return "training";
    case core::FunctionKind::kLlmInference:
      return "llm-inference";
    case core::FunctionKind::kInference:
      break;
  }
  return "inference";
}

}  // namespace sluice::sim
