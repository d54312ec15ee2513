// CSV trace parsing and the Poisson arrival schedule. Columns in errors point at the first
// non-blank character of the offending field so an editor can jump there.
#include "runtime/loadgen/trace.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <random>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

#include "common/status.h"

namespace sluice::runtime {
namespace {

// One comma-separated field of a line, trimmed, with its 1-based column.
struct Field {
  std::string text;
  int column = 1;
};

std::vector<Field> SplitFields(const std::string& line) {
  std::vector<Field> fields;
  size_t start = 0;
  while (true) {
    const size_t comma = line.find(',', start);
    const size_t end = comma == std::string::npos ? line.size() : comma;
    std::string raw = line.substr(start, end - start);
    const size_t lead = raw.find_first_not_of(" \t");
    fields.push_back({std::string(absl::StripAsciiWhitespace(raw)),
                      static_cast<int>(start + (lead == std::string::npos ? 0 : lead)) + 1});
    if (comma == std::string::npos)
      break;
    start = comma + 1;
  }
  return fields;
}

absl::Status At(const std::string& file, int line, int column, const std::string& message) {
  return absl::InvalidArgumentError(absl::StrCat(file, ":", line, ":", column, ": ", message));
}

absl::StatusOr<double> NonNegative(const Field& f, const std::string& file, int line,
                                   const std::string& what) {
  double v = 0;
  if (!absl::SimpleAtod(f.text, &v) || !std::isfinite(v)) {
    return At(file, line, f.column, absl::StrCat(what, ": '", f.text, "' is not a number"));
  }
  if (v < 0)
    return At(file, line, f.column, absl::StrCat(what, ": must be >= 0, got ", f.text));
  return v;
}

absl::Status ParseRow(const std::vector<Field>& fields, const std::string& file, int line,
                      Trace& trace) {
  const size_t want = trace.format == Trace::Format::kTimes ? 1 : 2;
  if (fields.size() != want) {
    const int column = fields.size() > want ? fields[want].column : fields.back().column;
    return At(file, line, column,
              absl::StrCat("expected ", want, " field(s), got ", fields.size()));
  }
  if (trace.format == Trace::Format::kTimes) {
    SLUICE_ASSIGN_OR_RETURN(const double t, NonNegative(fields[0], file, line, "time_s"));
    trace.times.push_back(absl::Seconds(t));
    return absl::OkStatus();
  }
  int64_t second = 0;
  if (!absl::SimpleAtoi(fields[0].text, &second) || second < 0) {
    return At(file, line, fields[0].column,
              absl::StrCat("second: must be an integer >= 0, got '", fields[0].text, "'"));
  }
  if (!trace.rates.empty() && second <= trace.rates.back().second) {
    return At(file, line, fields[0].column,
              absl::StrCat("second: must increase (previous row is second ",
                           trace.rates.back().second, ")"));
  }
  SLUICE_ASSIGN_OR_RETURN(const double rps, NonNegative(fields[1], file, line, "rps"));
  trace.rates.push_back({second, rps});
  return absl::OkStatus();
}

absl::Status ParseHeader(const std::vector<Field>& fields, const std::string& file, int line,
                         Trace& trace) {
  if (fields.size() == 1 && fields[0].text == "time_s") {
    trace.format = Trace::Format::kTimes;
    return absl::OkStatus();
  }
  if (fields.size() == 2 && fields[0].text == "second" && fields[1].text == "rps") {
    trace.format = Trace::Format::kRates;
    return absl::OkStatus();
  }
  return At(file, line, fields[0].column,
            "header must be 'time_s' (one request per row) or 'second,rps' (rate per second)");
}

}  // namespace

absl::StatusOr<Trace> ParseTrace(const std::string& contents, const std::string& file) {
  Trace trace;
  bool have_header = false;
  int header_line = 1;
  int line_no = 0;
  for (absl::string_view piece : absl::StrSplit(contents, '\n')) {
    ++line_no;
    std::string line(piece);
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    const absl::string_view trimmed = absl::StripAsciiWhitespace(line);
    if (trimmed.empty() || trimmed[0] == '#')
      continue;
    const std::vector<Field> fields = SplitFields(line);
    if (!have_header) {
      SLUICE_RETURN_IF_ERROR(ParseHeader(fields, file, line_no, trace));
      have_header = true;
      header_line = line_no;
      continue;
    }
    SLUICE_RETURN_IF_ERROR(ParseRow(fields, file, line_no, trace));
  }
  if (!have_header)
    return At(file, 1, 1, "empty trace: no header line");
  if (trace.times.empty() && trace.rates.empty()) {
    return At(file, header_line, 1, "trace has a header but no rows");
  }
  std::stable_sort(trace.times.begin(), trace.times.end());
  return trace;
}

absl::StatusOr<Trace> LoadTrace(const std::string& path) {
  std::ifstream in(path);
  if (!in)
    return absl::NotFoundError(absl::StrCat(path, ": cannot read trace file"));
  std::stringstream buffer;
  buffer << in.rdbuf();
  return ParseTrace(buffer.str(), path);
}

absl::Duration TraceLength(const Trace& trace) {
  if (trace.format == Trace::Format::kTimes) {
    return trace.times.empty() ? absl::ZeroDuration() : trace.times.back() + absl::Milliseconds(1);
  }
  return trace.rates.empty() ? absl::ZeroDuration() : absl::Seconds(trace.rates.back().second + 1);
}

std::vector<absl::Duration> Arrivals(const Trace& trace, uint64_t seed, absl::Duration limit) {
  std::vector<absl::Duration> out;
  if (trace.format == Trace::Format::kTimes) {
    for (absl::Duration t : trace.times) {
      if (t < limit)
        out.push_back(t);
    }
    return out;
  }
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> within(0.0, 1.0);
  for (const RateSecond& r : trace.rates) {
    if (absl::Seconds(r.second) >= limit)
      break;
    std::poisson_distribution<int64_t> count(r.rps > 0 ? r.rps : 1.0);
    const int64_t n = r.rps > 0 ? count(rng) : 0;
    const size_t first = out.size();
    for (int64_t i = 0; i < n; ++i) {
      // min(): a draw just below 1 must not round up into the next second.
      const absl::Duration t = std::min(absl::Seconds(r.second) + absl::Seconds(within(rng)),
                                        absl::Seconds(r.second + 1) - absl::Nanoseconds(1));
      if (t < limit)
        out.push_back(t);
    }
    std::sort(out.begin() + static_cast<std::ptrdiff_t>(first), out.end());
  }
  return out;
}

}  // namespace sluice::runtime
