// ParseWorkloadSpec (arrivals.h): strict parsing of a `workload:` YAML node. Values are read from
// the scalar text with absl so no yaml-cpp conversion exception is needed; a catch at the
// boundary still turns any yaml-cpp exception into a Status.
#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <system_error>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include "common/status.h"
#include "sim/workload/arrivals.h"

namespace sluice::sim {
namespace {

using common::InputError;

int LineOf(const YAML::Node& n) {
  return n.Mark().line + 1;
}

const std::map<std::string, WorkloadKind>& Kinds() {
  static const auto* kinds =
      new std::map<std::string, WorkloadKind>{{"none", WorkloadKind::kNone},
                                              {"poisson", WorkloadKind::kPoisson},
                                              {"gamma", WorkloadKind::kGamma},
                                              {"rps_series", WorkloadKind::kRpsSeries},
                                              {"request_trace", WorkloadKind::kRequestTrace},
                                              {"azure_functions", WorkloadKind::kAzureFunctions}};
  return *kinds;
}

// Keys each kind accepts besides `kind`, and those it requires.
struct KeyRules {
  std::set<std::string> allowed;
  std::set<std::string> required;
};

KeyRules RulesFor(WorkloadKind kind) {
  switch (kind) {
    case WorkloadKind::kNone:
      return {};
    case WorkloadKind::kPoisson:
      return {{"rate_rps", "start_offset_s"}, {"rate_rps"}};
    case WorkloadKind::kGamma:
      return {{"rate_rps", "cv", "start_offset_s"}, {"rate_rps", "cv"}};
    case WorkloadKind::kRpsSeries:
      return {{"path", "scale", "spread", "start_offset_s"}, {"path"}};
    case WorkloadKind::kRequestTrace:
      return {{"path", "scale", "start_offset_s", "timestamp_column", "prompt_tokens_column",
               "output_tokens_column"},
              {"path"}};
    case WorkloadKind::kAzureFunctions:
      return {{"path", "scale", "spread", "start_offset_s", "function"}, {"path"}};
    case WorkloadKind::kLongTail:  // not written in YAML: function groups generate it
      return {};
  }
  return {};
}

class Parser {
 public:
  Parser(const std::string& file, const std::string& base_dir) : file_(file), base_dir_(base_dir) {}

  absl::StatusOr<WorkloadSpec> Parse(const YAML::Node& node) {
    if (!node.IsMap()) {
      return InputError({file_, LineOf(node)}, "workload",
                        "expected a map such as {kind: poisson, rate_rps: 50}");
    }
    spec_.source_file = file_;
    spec_.source_line = LineOf(node);
    const YAML::Node kind = node["kind"];
    if (!kind) {
      return InputError({file_, spec_.source_line}, "kind", "missing (required)");
    }
    SLUICE_ASSIGN_OR_RETURN(const std::string kind_name, String(kind, "kind"));
    const auto it = Kinds().find(kind_name);
    if (it == Kinds().end()) {
      return UnknownKind(kind, kind_name);
    }
    spec_.kind = it->second;
    const KeyRules rules = RulesFor(spec_.kind);
    for (const auto& entry : node) {
      SLUICE_RETURN_IF_ERROR(Entry(entry.first, entry.second, kind_name, rules));
    }
    for (const std::string& key : rules.required) {
      if (!node[key]) {
        return InputError({file_, spec_.source_line}, key,
                          absl::StrCat("missing (required for kind ", kind_name, ")"));
      }
    }
    return spec_;
  }

 private:
  absl::Status UnknownKind(const YAML::Node& n, const std::string& name) {
    std::vector<std::string> names;
    for (const auto& [k, v] : Kinds()) {
      names.push_back(k);
    }
    return InputError(
        {file_, LineOf(n)}, "kind",
        absl::StrCat("unknown kind '", name, "' (one of ", absl::StrJoin(names, ", "), ")"));
  }

  absl::Status Entry(const YAML::Node& key_node, const YAML::Node& v, const std::string& kind,
                     const KeyRules& rules) {
    if (!key_node.IsScalar()) {
      return InputError({file_, LineOf(key_node)}, "", "non-scalar key");
    }
    const std::string& key = key_node.Scalar();
    if (key == "kind") {
      return absl::OkStatus();
    }
    if (rules.allowed.count(key) == 0) {
      return InputError(
          {file_, LineOf(key_node)}, key,
          absl::StrCat("unknown key for kind ", kind, " (allowed: kind",
                       rules.allowed.empty() ? "" : ", ", absl::StrJoin(rules.allowed, ", "), ")"));
    }
    return Value(key, v);
  }

  absl::Status Value(const std::string& key, const YAML::Node& v) {
    if (key == "rate_rps") {
      return Number(v, key, 0, false, &spec_.rate_rps);
    }
    if (key == "cv") {
      return Number(v, key, 0, true, &spec_.cv);
    }
    if (key == "scale") {
      return Scale(v);
    }
    if (key == "start_offset_s") {
      double s = 0;
      SLUICE_RETURN_IF_ERROR(Number(v, key, 0, false, &s));
      spec_.start_offset = absl::Seconds(s);
      return absl::OkStatus();
    }
    if (key == "spread") {
      return Spread(v);
    }
    if (key == "path") {
      return Path(v);
    }
    std::string* target = key == "timestamp_column"       ? &spec_.timestamp_column
                          : key == "prompt_tokens_column" ? &spec_.prompt_tokens_column
                          : key == "output_tokens_column" ? &spec_.output_tokens_column
                                                          : &spec_.function_id;
    SLUICE_ASSIGN_OR_RETURN(*target, String(v, key));
    if (target->empty()) {
      return InputError({file_, LineOf(v)}, key, "must not be empty");
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::string> String(const YAML::Node& v, const std::string& key) {
    if (!v.IsScalar()) {
      return InputError({file_, LineOf(v)}, key, "expected a string");
    }
    return v.Scalar();
  }

  // A finite number >= min (> min when `strict`).
  absl::Status Number(const YAML::Node& v, const std::string& key, double min, bool strict,
                      double* out) {
    double x;
    if (!v.IsScalar() || !absl::SimpleAtod(v.Scalar(), &x) || !std::isfinite(x)) {
      return InputError({file_, LineOf(v)}, key,
                        absl::StrCat("expected a finite number, got '",
                                     v.IsScalar() ? v.Scalar() : "<non-scalar>", "'"));
    }
    if (strict ? x <= min : x < min) {
      return InputError({file_, LineOf(v)}, key,
                        absl::StrCat("must be ", strict ? "> " : ">= ", min, ", got ", x));
    }
    *out = x;
    return absl::OkStatus();
  }

  absl::Status Scale(const YAML::Node& v) {
    // A request trace's scale divides time, so 0 would put every request at the same instant.
    const bool strict = spec_.kind == WorkloadKind::kRequestTrace;
    return Number(v, "scale", 0, strict, &spec_.scale);
  }

  absl::Status Spread(const YAML::Node& v) {
    SLUICE_ASSIGN_OR_RETURN(const std::string s, String(v, "spread"));
    if (s == "even") {
      spec_.spread = ArrivalSpread::kEven;
    } else if (s == "poisson") {
      spec_.spread = ArrivalSpread::kPoisson;
    } else if (s == "uniform") {
      spec_.spread = ArrivalSpread::kUniform;
    } else {
      return InputError({file_, LineOf(v)}, "spread",
                        absl::StrCat("unknown spread '", s, "' (one of even, poisson, uniform)"));
    }
    return absl::OkStatus();
  }

  absl::Status Path(const YAML::Node& v) {
    SLUICE_ASSIGN_OR_RETURN(const std::string raw, String(v, "path"));
    if (raw.empty()) {
      return InputError({file_, LineOf(v)}, "path", "must not be empty");
    }
    std::filesystem::path p(raw);
    if (p.is_relative() && !base_dir_.empty()) {
      p = std::filesystem::path(base_dir_) / p;
    }
    spec_.path = p.lexically_normal().string();
    std::error_code ec;
    if (!std::filesystem::is_regular_file(spec_.path, ec) &&
        !std::filesystem::is_regular_file(spec_.path + ".xz", ec)) {
      return InputError(
          {file_, LineOf(v)}, "path",
          absl::StrCat("no such file '", spec_.path, "' (nor '", spec_.path, ".xz')"));
    }
    return absl::OkStatus();
  }

  const std::string& file_;
  const std::string& base_dir_;
  WorkloadSpec spec_;
};

}  // namespace

absl::StatusOr<WorkloadSpec> ParseWorkloadSpec(const YAML::Node& node, const std::string& file,
                                               const std::string& base_dir) {
  try {
    return Parser(file, base_dir).Parse(node);
  } catch (const YAML::Exception& e) {
    return InputError({file, e.mark.line + 1}, "workload", e.msg);
  }
}

}  // namespace sluice::sim
