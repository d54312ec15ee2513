// ParseAzureFunctionsRow (declared in trace_readers.h). A day file has ~46k rows x 1,444 columns,
// so rows other than the selected one are only scanned up to their third comma. The minute
// columns may be any contiguous range (a slice of a day, or several days).
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

#include "common/status.h"
#include "sim/workload/text_lines.h"
#include "sim/workload/trace_readers.h"

namespace sluice::sim {
namespace {

using common::InputError;

constexpr int kFixedColumns = 4;  // HashOwner, HashApp, HashFunction, Trigger
constexpr const char* kFixedNames[kFixedColumns] = {"HashOwner", "HashApp", "HashFunction",
                                                    "Trigger"};

// The minute columns a file carries: any contiguous, increasing range first..last (the full
// day file has 1..1440; a slice, e.g. 601..720, or a multi-day file, 1..20160, is accepted).
struct MinuteColumns {
  int first = 1;
  int count = 0;
};

absl::StatusOr<MinuteColumns> CheckHeader(absl::string_view line, const std::string& file) {
  const std::vector<absl::string_view> f = SplitCsvLine(line);
  if (f.size() <= kFixedColumns) {
    return InputError({file, 1}, "",
                      absl::StrCat("Azure Functions header must have ", kFixedColumns,
                                   " named columns and at least one minute column, got ",
                                   f.size(), " columns"));
  }
  for (int i = 0; i < kFixedColumns; ++i) {
    if (f[i] != kFixedNames[i]) {
      return InputError({file, 1}, kFixedNames[i],
                        absl::StrCat("expected column ", i + 1, " to be '", kFixedNames[i],
                                     "', got '", f[i], "'"));
    }
  }
  MinuteColumns m;
  m.count = static_cast<int>(f.size()) - kFixedColumns;
  if (!absl::SimpleAtoi(f[kFixedColumns], &m.first) || m.first < 1 ||
      m.first > kMaxAzureMinute - m.count + 1) {
    return InputError({file, 1}, std::string(f[kFixedColumns]),
                      absl::StrCat("minute columns must be numbered from 1 to ", kMaxAzureMinute,
                                   ", got '", f[kFixedColumns], "'"));
  }
  for (int i = 1; i < m.count; ++i) {
    if (f[kFixedColumns + i] != absl::StrCat(m.first + i)) {
      return InputError({file, 1}, std::string(f[kFixedColumns + i]),
                        absl::StrCat("minute columns must be contiguous: expected ", m.first + i,
                                     " after ", m.first + i - 1));
    }
  }
  return m;
}

// The HashFunction field of a data row without splitting the whole row.
std::optional<absl::string_view> HashFunctionOf(absl::string_view line) {
  size_t start = 0;
  for (int i = 0; i < 2; ++i) {
    start = line.find(',', start);
    if (start == absl::string_view::npos) {
      return std::nullopt;
    }
    ++start;
  }
  const size_t end = line.find(',', start);
  if (end == absl::string_view::npos) {
    return std::nullopt;
  }
  absl::string_view h = absl::StripAsciiWhitespace(line.substr(start, end - start));
  if (h.size() >= 2 && h.front() == '"' && h.back() == '"') {
    h = h.substr(1, h.size() - 2);
  }
  return h;
}

// Counts indexed from minute 1: minutes before the file's first column are 0.
absl::StatusOr<std::vector<double>> ParseCounts(absl::string_view line, const std::string& file,
                                                int line_no, const MinuteColumns& columns) {
  const std::vector<absl::string_view> f = SplitCsvLine(line);
  if (f.size() != static_cast<size_t>(kFixedColumns + columns.count)) {
    return InputError(
        {file, line_no}, "",
        absl::StrCat("expected ", kFixedColumns + columns.count, " fields, got ", f.size()));
  }
  std::vector<double> counts(columns.first - 1 + columns.count, 0.0);
  for (int m = 0; m < columns.count; ++m) {
    int64_t v;
    const absl::string_view s = f[kFixedColumns + m];
    if (!absl::SimpleAtoi(s, &v) || v < 0) {
      return InputError({file, line_no}, absl::StrCat(columns.first + m),
                        absl::StrCat("expected an invocation count >= 0, got '", s, "'"));
    }
    counts[columns.first - 1 + m] = static_cast<double>(v);
  }
  return counts;
}

}  // namespace

absl::StatusOr<std::vector<double>> ParseAzureFunctionsRow(absl::string_view contents,
                                                           const std::string& file,
                                                           const std::string& function_hash) {
  LineCursor lines(contents);
  const std::optional<absl::string_view> header = lines.Next();
  if (!header.has_value()) {
    return InputError({file, 0}, "", "empty file (no header row)");
  }
  SLUICE_ASSIGN_OR_RETURN(const MinuteColumns columns, CheckHeader(*header, file));
  while (const std::optional<absl::string_view> text = lines.Next()) {
    if (absl::StripAsciiWhitespace(*text).empty()) {
      if (lines.RestIsBlank()) {
        break;
      }
      return InputError({file, lines.line()}, "", "blank line before the end of the file");
    }
    const std::optional<absl::string_view> hash = HashFunctionOf(*text);
    if (!hash.has_value()) {
      return InputError({file, lines.line()}, "", "expected at least 4 comma-separated fields");
    }
    if (function_hash.empty() || *hash == function_hash) {
      return ParseCounts(*text, file, lines.line(), columns);
    }
  }
  if (function_hash.empty()) {
    return InputError({file, 2}, "", "no data rows after the header");
  }
  return InputError({file, 0}, "function",
                    absl::StrCat("no row has HashFunction '", function_hash, "'"));
}

}  // namespace sluice::sim
