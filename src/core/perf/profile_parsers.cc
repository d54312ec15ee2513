#include "core/perf/profile_parsers.h"

#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

#include "common/status.h"

namespace sluice::core {
namespace {

using common::InputError;
using common::InputLocation;

// One non-blank line of a CSV file, split into trimmed fields.
struct Row {
  int line = 0;
  std::vector<absl::string_view> fields;
};

std::vector<Row> SplitRows(absl::string_view contents) {
  std::vector<Row> rows;
  int line = 0;
  for (absl::string_view text : absl::StrSplit(contents, '\n')) {
    ++line;
    text = absl::StripAsciiWhitespace(text);
    if (text.empty())
      continue;
    Row row{line, {}};
    for (absl::string_view f : absl::StrSplit(text, ',')) {
      f = absl::StripAsciiWhitespace(f);
      if (f.size() >= 2 && f.front() == '"' && f.back() == '"')
        f = f.substr(1, f.size() - 2);
      row.fields.push_back(f);
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

class RowReader {
 public:
  RowReader(absl::string_view file, const Row& row)
      : where_{std::string(file), row.line}, row_(row) {}

  absl::Status ExpectColumns(size_t n) const {
    if (row_.fields.size() == n)
      return absl::OkStatus();
    return InputError(
        where_, "row",
        absl::StrCat("expected ", n, " comma-separated columns, got ", row_.fields.size()));
  }
  absl::StatusOr<double> Number(size_t col, absl::string_view field) const {
    double v = 0;
    if (!absl::SimpleAtod(row_.fields[col], &v) || !std::isfinite(v)) {
      return InputError(where_, field, absl::StrCat("not a number: '", row_.fields[col], "'"));
    }
    return v;
  }
  absl::StatusOr<int> Batch(size_t col, absl::string_view field) const {
    SLUICE_ASSIGN_OR_RETURN(double v, Number(col, field));
    if (v < 1 || v > 1e6 || v != std::floor(v)) {
      return InputError(where_, field, absl::StrCat("must be an integer >= 1, got ", v));
    }
    return static_cast<int>(v);
  }
  // A percentage in (0, 100], returned as a fraction.
  absl::StatusOr<double> Percent(size_t col, absl::string_view field) const {
    SLUICE_ASSIGN_OR_RETURN(double v, Number(col, field));
    if (!(v > 0 && v <= 100)) {
      return InputError(where_, field, absl::StrCat("must be in (0, 100], got ", v));
    }
    return v / 100.0;
  }
  absl::StatusOr<double> Positive(size_t col, absl::string_view field) const {
    SLUICE_ASSIGN_OR_RETURN(double v, Number(col, field));
    if (!(v > 0))
      return InputError(where_, field, absl::StrCat("must be > 0, got ", v));
    return v;
  }
  absl::StatusOr<double> NonNegative(size_t col, absl::string_view field) const {
    SLUICE_ASSIGN_OR_RETURN(double v, Number(col, field));
    if (!(v >= 0))
      return InputError(where_, field, absl::StrCat("must be >= 0, got ", v));
    return v;
  }
  absl::StatusOr<std::string> Name(size_t col, absl::string_view field) const {
    if (row_.fields[col].empty())
      return InputError(where_, field, "must not be empty");
    return std::string(row_.fields[col]);
  }
  absl::Status Literal(size_t col, absl::string_view expected) const {
    if (absl::AsciiStrToLower(row_.fields[col]) == expected)
      return absl::OkStatus();
    return InputError(where_, absl::StrCat("column ", col + 1),
                      absl::StrCat("expected '", expected, "', got '", row_.fields[col], "'"));
  }

 private:
  InputLocation where_;
  const Row& row_;
};

absl::StatusOr<ProfilePoint> DiluRow(const RowReader& r, absl::string_view model, int line) {
  SLUICE_RETURN_IF_ERROR(r.ExpectColumns(4));
  ProfilePoint p{std::string(model), 1, 1.0, 1.0, 0, line};
  SLUICE_ASSIGN_OR_RETURN(p.batch, r.Batch(0, "batch"));
  SLUICE_ASSIGN_OR_RETURN(p.sm_share, r.Percent(1, "sm_percent"));
  SLUICE_ASSIGN_OR_RETURN(p.latency_s, r.Positive(2, "latency_s"));
  SLUICE_RETURN_IF_ERROR(r.Number(3, "throughput").status());
  return p;
}

absl::StatusOr<ProfilePoint> RappRow(const RowReader& r, int line) {
  SLUICE_RETURN_IF_ERROR(r.ExpectColumns(5));
  ProfilePoint p;
  p.line = line;
  SLUICE_ASSIGN_OR_RETURN(p.model, r.Name(0, "model"));
  SLUICE_ASSIGN_OR_RETURN(p.sm_share, r.Percent(1, "sm_pct"));
  SLUICE_ASSIGN_OR_RETURN(p.batch, r.Batch(2, "batch"));
  SLUICE_ASSIGN_OR_RETURN(p.time_quota, r.Percent(3, "quota_pct"));
  SLUICE_ASSIGN_OR_RETURN(double ms, r.Positive(4, "latency_ms"));
  p.latency_s = ms / 1000.0;
  return p;
}

absl::StatusOr<ProfilePoint> GpuletInferenceRow(const RowReader& r, int line) {
  SLUICE_RETURN_IF_ERROR(r.ExpectColumns(8));
  ProfilePoint p;
  p.line = line;
  SLUICE_ASSIGN_OR_RETURN(p.model, r.Name(0, "model"));
  SLUICE_ASSIGN_OR_RETURN(p.batch, r.Batch(1, "batch"));
  SLUICE_ASSIGN_OR_RETURN(p.sm_share, r.Percent(2, "partition_pct"));
  SLUICE_RETURN_IF_ERROR(r.Literal(3, "throughput"));
  SLUICE_RETURN_IF_ERROR(r.Number(4, "throughput").status());
  SLUICE_RETURN_IF_ERROR(r.Literal(5, "latency"));
  SLUICE_ASSIGN_OR_RETURN(p.latency_s, r.Positive(6, "latency"));
  return p;
}

absl::StatusOr<InterferencePoint> GpuletInterferenceRow(const RowReader& r, int line) {
  SLUICE_RETURN_IF_ERROR(r.ExpectColumns(10));
  InterferencePoint p;
  p.line = line;
  SLUICE_ASSIGN_OR_RETURN(p.model_a, r.Name(0, "modelA"));
  SLUICE_ASSIGN_OR_RETURN(p.batch_a, r.Batch(1, "batchA"));
  SLUICE_ASSIGN_OR_RETURN(p.share_a, r.Percent(2, "partitionA"));
  SLUICE_ASSIGN_OR_RETURN(p.model_b, r.Name(3, "modelB"));
  SLUICE_ASSIGN_OR_RETURN(p.batch_b, r.Batch(4, "batchB"));
  SLUICE_RETURN_IF_ERROR(r.Literal(5, "throughput"));
  SLUICE_RETURN_IF_ERROR(r.Number(6, "throughput").status());
  SLUICE_RETURN_IF_ERROR(r.Literal(7, "latency"));
  SLUICE_ASSIGN_OR_RETURN(p.latency_s, r.Positive(8, "latency"));
  return p;
}

// Column positions of a Vidur mlp.csv header.
struct VidurColumns {
  size_t tokens = 0, tp = 0, count = 0;
  std::vector<size_t> medians;
};

absl::StatusOr<VidurColumns> VidurHeader(absl::string_view file, const Row& header) {
  VidurColumns cols;
  cols.count = header.fields.size();
  bool have_tokens = false, have_tp = false;
  for (size_t i = 0; i < header.fields.size(); ++i) {
    absl::string_view f = header.fields[i];
    if (f == "num_tokens")
      cols.tokens = i, have_tokens = true;
    if (f == "num_tensor_parallel_workers")
      cols.tp = i, have_tp = true;
    if (absl::StartsWith(f, "time_stats.") && absl::EndsWith(f, ".median") &&
        f != "time_stats.emb.median") {
      cols.medians.push_back(i);
    }
  }
  if (!have_tokens || !have_tp || cols.medians.empty()) {
    return InputError({std::string(file), header.line}, "header",
                      "needs num_tokens, num_tensor_parallel_workers and time_stats.*.median");
  }
  return cols;
}

absl::StatusOr<VidurLayerTime> VidurRow(const RowReader& r, const VidurColumns& cols, int line) {
  SLUICE_RETURN_IF_ERROR(r.ExpectColumns(cols.count));
  VidurLayerTime t;
  t.line = line;
  SLUICE_ASSIGN_OR_RETURN(t.num_tokens, r.Batch(cols.tokens, "num_tokens"));
  SLUICE_ASSIGN_OR_RETURN(t.tensor_parallel, r.Batch(cols.tp, "num_tensor_parallel_workers"));
  for (size_t c : cols.medians) {
    SLUICE_ASSIGN_OR_RETURN(double ms, r.NonNegative(c, "time_stats median"));
    t.layer_time_s += ms / 1000.0;
  }
  return t;
}

}  // namespace

absl::StatusOr<std::vector<ProfilePoint>> ParseDiluProfile(absl::string_view contents,
                                                           absl::string_view file,
                                                           absl::string_view model) {
  std::vector<ProfilePoint> out;
  for (const Row& row : SplitRows(contents)) {
    SLUICE_ASSIGN_OR_RETURN(ProfilePoint p, DiluRow(RowReader(file, row), model, row.line));
    out.push_back(std::move(p));
  }
  if (out.empty())
    return InputError({std::string(file), 0}, "contents", "no data rows");
  return out;
}

absl::StatusOr<std::vector<ProfilePoint>> ParseRappProfiles(absl::string_view contents,
                                                            absl::string_view file) {
  std::vector<Row> rows = SplitRows(contents);
  if (rows.empty())
    return InputError({std::string(file), 0}, "contents", "empty file");
  const Row& header = rows.front();
  const std::vector<absl::string_view> expected = {"model", "sm_pct", "batch", "quota_pct",
                                                   "latency_ms"};
  if (header.fields != expected) {
    return InputError({std::string(file), header.line}, "header",
                      "expected 'model,sm_pct,batch,quota_pct,latency_ms'");
  }
  std::vector<ProfilePoint> out;
  out.reserve(rows.size() - 1);
  for (size_t i = 1; i < rows.size(); ++i) {
    SLUICE_ASSIGN_OR_RETURN(ProfilePoint p, RappRow(RowReader(file, rows[i]), rows[i].line));
    out.push_back(std::move(p));
  }
  if (out.empty())
    return InputError({std::string(file), 0}, "contents", "no data rows");
  return out;
}

absl::StatusOr<std::vector<ProfilePoint>> ParseGpuletInference(absl::string_view contents,
                                                               absl::string_view file) {
  std::vector<ProfilePoint> out;
  for (const Row& row : SplitRows(contents)) {
    SLUICE_ASSIGN_OR_RETURN(ProfilePoint p, GpuletInferenceRow(RowReader(file, row), row.line));
    out.push_back(std::move(p));
  }
  if (out.empty())
    return InputError({std::string(file), 0}, "contents", "no data rows");
  return out;
}

absl::StatusOr<std::vector<InterferencePoint>> ParseGpuletInterference(absl::string_view contents,
                                                                       absl::string_view file) {
  std::vector<InterferencePoint> out;
  for (const Row& row : SplitRows(contents)) {
    SLUICE_ASSIGN_OR_RETURN(InterferencePoint p,
                            GpuletInterferenceRow(RowReader(file, row), row.line));
    out.push_back(std::move(p));
  }
  if (out.empty())
    return InputError({std::string(file), 0}, "contents", "no data rows");
  return out;
}

absl::StatusOr<std::vector<VidurLayerTime>> ParseVidurMlp(absl::string_view contents,
                                                          absl::string_view file) {
  std::vector<Row> rows = SplitRows(contents);
  if (rows.empty())
    return InputError({std::string(file), 0}, "contents", "empty file");
  SLUICE_ASSIGN_OR_RETURN(VidurColumns cols, VidurHeader(file, rows.front()));
  std::vector<VidurLayerTime> out;
  for (size_t i = 1; i < rows.size(); ++i) {
    SLUICE_ASSIGN_OR_RETURN(VidurLayerTime t,
                            VidurRow(RowReader(file, rows[i]), cols, rows[i].line));
    out.push_back(t);
  }
  if (out.empty())
    return InputError({std::string(file), 0}, "contents", "no data rows");
  return out;
}

}  // namespace sluice::core
