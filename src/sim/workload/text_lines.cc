// Hand-rolled parsing (no regex, no absl::ParseTime) because request traces can have millions of
// rows and the timestamp format is fixed.
#include "sim/workload/text_lines.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_split.h"

namespace sluice::sim {

LineCursor::LineCursor(absl::string_view text) : text_(text) {
  if (absl::StartsWith(text_, "\xEF\xBB\xBF")) {
    pos_ = 3;
  }
}

std::optional<absl::string_view> LineCursor::Next() {
  if (pos_ >= text_.size()) {
    return std::nullopt;
  }
  size_t end = text_.find('\n', pos_);
  if (end == absl::string_view::npos) {
    end = text_.size();
  }
  absl::string_view line = text_.substr(pos_, end - pos_);
  pos_ = end + 1;
  ++line_;
  if (!line.empty() && line.back() == '\r') {
    line.remove_suffix(1);
  }
  return line;
}

bool LineCursor::RestIsBlank() const {
  if (pos_ >= text_.size()) {
    return true;
  }
  return absl::StripAsciiWhitespace(text_.substr(pos_)).empty();
}

std::vector<absl::string_view> SplitCsvLine(absl::string_view line) {
  std::vector<absl::string_view> fields = absl::StrSplit(line, ',');
  for (absl::string_view& f : fields) {
    f = absl::StripAsciiWhitespace(f);
    if (f.size() >= 2 && f.front() == '"' && f.back() == '"') {
      f = f.substr(1, f.size() - 2);
    }
  }
  return fields;
}

namespace {

// Reads exactly `n` decimal digits at `s[pos]`; nullopt otherwise.
std::optional<int> Digits(absl::string_view s, size_t pos, size_t n) {
  if (pos + n > s.size()) {
    return std::nullopt;
  }
  int v = 0;
  for (size_t i = pos; i < pos + n; ++i) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(s[i]))) {
      return std::nullopt;
    }
    v = v * 10 + (s[i] - '0');
  }
  return v;
}

}  // namespace

std::optional<absl::Time> ParseWallClock(absl::string_view text) {
  // Layout: YYYY-mm-dd HH:MM:SS, separators at 4, 7, 10, 13, 16.
  if (text.size() < 19 || text[4] != '-' || text[7] != '-' ||
      (text[10] != ' ' && text[10] != 'T') || text[13] != ':' || text[16] != ':') {
    return std::nullopt;
  }
  const auto y = Digits(text, 0, 4), mo = Digits(text, 5, 2), d = Digits(text, 8, 2);
  const auto h = Digits(text, 11, 2), mi = Digits(text, 14, 2), s = Digits(text, 17, 2);
  if (!y || !mo || !d || !h || !mi || !s) {
    return std::nullopt;
  }
  if (*mo < 1 || *mo > 12 || *d < 1 || *d > 31 || *h > 23 || *mi > 59 || *s > 60) {
    return std::nullopt;
  }
  int64_t nanos = 0;
  if (text.size() > 19) {
    if (text[19] != '.' || text.size() == 20) {
      return std::nullopt;
    }
    int64_t unit = 100000000;
    for (size_t i = 20; i < text.size(); ++i) {
      if (!absl::ascii_isdigit(static_cast<unsigned char>(text[i]))) {
        return std::nullopt;
      }
      nanos += (text[i] - '0') * unit;
      unit /= 10;
    }
  }
  const absl::CivilSecond civil(*y, *mo, *d, *h, *mi, *s);
  // CivilSecond normalises out-of-range days (Feb 30 -> Mar 2); reject those.
  if (civil.day() != *d) {
    return std::nullopt;
  }
  return absl::FromCivil(civil, absl::UTCTimeZone()) + absl::Nanoseconds(nanos);
}

}  // namespace sluice::sim
