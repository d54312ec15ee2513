// ParseAzureFunctionsRow (declared in trace_readers.h). A day file has ~46k rows x 1,444 columns,
// so rows other than the selected one are only scanned up to their third comma.
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

absl::Status CheckHeader(absl::string_view line, const std::string& file) {
  const std::vector<absl::string_view> f = SplitCsvLine(line);
  if (f.size() != kFixedColumns + kAzureMinutesPerDay) {
    return InputError(
        {file, 1}, "",
        absl::StrCat("Azure Functions header must have ", kFixedColumns + kAzureMinutesPerDay,
                     " columns, got ", f.size()));
  }
  for (int i = 0; i < kFixedColumns; ++i) {
    if (f[i] != kFixedNames[i]) {
      return InputError({file, 1}, kFixedNames[i],
                        absl::StrCat("expected column ", i + 1, " to be '", kFixedNames[i],
                                     "', got '", f[i], "'"));
    }
  }
  for (int m = 1; m <= kAzureMinutesPerDay; ++m) {
    if (f[kFixedColumns + m - 1] != absl::StrCat(m)) {
      return InputError({file, 1}, absl::StrCat(m), "minute columns must be named 1..1440");
    }
  }
  return absl::OkStatus();
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

absl::StatusOr<std::vector<double>> ParseCounts(absl::string_view line, const std::string& file,
                                                int line_no) {
  const std::vector<absl::string_view> f = SplitCsvLine(line);
  if (f.size() != kFixedColumns + kAzureMinutesPerDay) {
    return InputError(
        {file, line_no}, "",
        absl::StrCat("expected ", kFixedColumns + kAzureMinutesPerDay, " fields, got ", f.size()));
  }
  std::vector<double> counts(kAzureMinutesPerDay);
  for (int m = 0; m < kAzureMinutesPerDay; ++m) {
    int64_t v;
    const absl::string_view s = f[kFixedColumns + m];
    if (!absl::SimpleAtoi(s, &v) || v < 0) {
      return InputError({file, line_no}, absl::StrCat(m + 1),
                        absl::StrCat("expected an invocation count >= 0, got '", s, "'"));
    }
    counts[m] = static_cast<double>(v);
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
  SLUICE_RETURN_IF_ERROR(CheckHeader(*header, file));
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
      return ParseCounts(*text, file, lines.line());
    }
  }
  if (function_hash.empty()) {
    return InputError({file, 2}, "", "no data rows after the header");
  }
  return InputError({file, 0}, "function",
                    absl::StrCat("no row has HashFunction '", function_hash, "'"));
}

}  // namespace sluice::sim
