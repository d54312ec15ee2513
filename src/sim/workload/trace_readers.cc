// Strict readers: every malformed line is an error naming file:line, never a skipped row.
#include "sim/workload/trace_readers.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"

#include "common/status.h"
#include "sim/workload/text_lines.h"

namespace sluice::sim {
namespace {

using common::InputError;

// A non-negative finite real.
std::optional<double> ParseNonNegative(absl::string_view s) {
  double v;
  if (!absl::SimpleAtod(s, &v) || !std::isfinite(v) || v < 0) {
    return std::nullopt;
  }
  return v;
}

absl::Status BlankLineError(const std::string& file, int line) {
  return InputError({file, line}, "", "blank line before the end of the file");
}

// Index of `name` in `header`, or an error naming the YAML field that asked for it.
absl::StatusOr<int> ColumnIndex(const std::vector<absl::string_view>& header,
                                const std::string& name, const std::string& file) {
  for (size_t i = 0; i < header.size(); ++i) {
    if (header[i] == name) {
      return static_cast<int>(i);
    }
  }
  return InputError({file, 1}, name, "column not found in the header");
}

// Where each requested column sits; -1 for columns not requested.
struct ColumnIndices {
  int timestamp = -1;
  int prompt = -1;
  int output = -1;
  int needed = 0;  // fields a row must have
};

absl::StatusOr<ColumnIndices> FindColumns(absl::string_view header_line, const std::string& file,
                                          const RequestTraceColumns& columns) {
  const std::vector<absl::string_view> header = SplitCsvLine(header_line);
  ColumnIndices idx;
  SLUICE_ASSIGN_OR_RETURN(idx.timestamp, ColumnIndex(header, columns.timestamp, file));
  if (!columns.prompt_tokens.empty()) {
    SLUICE_ASSIGN_OR_RETURN(idx.prompt, ColumnIndex(header, columns.prompt_tokens, file));
  }
  if (!columns.output_tokens.empty()) {
    SLUICE_ASSIGN_OR_RETURN(idx.output, ColumnIndex(header, columns.output_tokens, file));
  }
  idx.needed = std::max({idx.timestamp, idx.prompt, idx.output}) + 1;
  return idx;
}

absl::StatusOr<int> ParseTokens(absl::string_view s, const std::string& column,
                                const std::string& file, int line) {
  int v;
  if (!absl::SimpleAtoi(s, &v) || v < 0) {
    return InputError({file, line}, column,
                      absl::StrCat("expected an integer >= 0, got '", s, "'"));
  }
  return v;
}

// Timestamps in one of two forms; the first data row fixes which.
class TimestampReader {
 public:
  // Seconds since an arbitrary origin (numeric: the value; wall clock: since the Unix epoch).
  absl::StatusOr<double> Read(absl::string_view s, const std::string& column,
                              const std::string& file, int line) {
    double secs;
    const bool numeric = absl::SimpleAtod(s, &secs) && std::isfinite(secs);
    if (!numeric_.has_value()) {
      numeric_ = numeric;
    }
    if (numeric && *numeric_) {
      return secs;
    }
    if (!numeric && !*numeric_) {
      if (const std::optional<absl::Time> t = ParseWallClock(s); t.has_value()) {
        // Relative to a fixed origin near the trace keeps full double precision.
        if (!origin_.has_value()) {
          origin_ = *t;
        }
        return absl::ToDoubleSeconds(*t - *origin_);
      }
    }
    return InputError({file, line}, column,
                      absl::StrCat("expected ", *numeric_ ? "seconds" : "YYYY-mm-dd HH:MM:SS[.f]",
                                   " (the form of the first row), got '", s, "'"));
  }

 private:
  std::optional<bool> numeric_;
  std::optional<absl::Time> origin_;
};

absl::StatusOr<TraceRequest> ParseTraceRow(absl::string_view text, const ColumnIndices& idx,
                                           const RequestTraceColumns& columns, TimestampReader& ts,
                                           const std::string& file, int line) {
  const std::vector<absl::string_view> f = SplitCsvLine(text);
  if (static_cast<int>(f.size()) < idx.needed) {
    return InputError({file, line}, "",
                      absl::StrCat("expected at least ", idx.needed, " fields, got ", f.size()));
  }
  TraceRequest r;
  SLUICE_ASSIGN_OR_RETURN(r.at_s, ts.Read(f[idx.timestamp], columns.timestamp, file, line));
  if (idx.prompt >= 0) {
    SLUICE_ASSIGN_OR_RETURN(r.prompt_tokens,
                            ParseTokens(f[idx.prompt], columns.prompt_tokens, file, line));
  }
  if (idx.output >= 0) {
    SLUICE_ASSIGN_OR_RETURN(r.output_tokens,
                            ParseTokens(f[idx.output], columns.output_tokens, file, line));
  }
  return r;
}

}  // namespace

absl::StatusOr<std::vector<double>> ParseRpsSeries(absl::string_view contents,
                                                   const std::string& file) {
  std::vector<double> values;
  LineCursor lines(contents);
  while (const std::optional<absl::string_view> raw = lines.Next()) {
    const absl::string_view text = absl::StripAsciiWhitespace(*raw);
    if (text.empty()) {
      if (lines.RestIsBlank()) {
        break;
      }
      return BlankLineError(file, lines.line());
    }
    const std::optional<double> v = ParseNonNegative(text);
    if (!v.has_value()) {
      return InputError({file, lines.line()}, "",
                        absl::StrCat("expected a finite number >= 0, got '", text, "'"));
    }
    values.push_back(*v);
  }
  if (values.empty()) {
    return InputError({file, 0}, "", "the series is empty");
  }
  return values;
}

absl::StatusOr<std::vector<TraceRequest>> ParseRequestTrace(absl::string_view contents,
                                                            const std::string& file,
                                                            const RequestTraceColumns& columns) {
  LineCursor lines(contents);
  const std::optional<absl::string_view> header = lines.Next();
  if (!header.has_value()) {
    return InputError({file, 0}, "", "empty file (no header row)");
  }
  SLUICE_ASSIGN_OR_RETURN(const ColumnIndices idx, FindColumns(*header, file, columns));
  std::vector<TraceRequest> rows;
  TimestampReader ts;
  while (const std::optional<absl::string_view> text = lines.Next()) {
    if (absl::StripAsciiWhitespace(*text).empty()) {
      if (lines.RestIsBlank()) {
        break;
      }
      return BlankLineError(file, lines.line());
    }
    SLUICE_ASSIGN_OR_RETURN(TraceRequest r,
                            ParseTraceRow(*text, idx, columns, ts, file, lines.line()));
    rows.push_back(r);
  }
  if (rows.empty()) {
    return InputError({file, 2}, "", "no data rows after the header");
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const TraceRequest& a, const TraceRequest& b) { return a.at_s < b.at_s; });
  const double origin = rows.front().at_s;
  for (TraceRequest& r : rows) {
    r.at_s -= origin;
  }
  return rows;
}

}  // namespace sluice::sim
