// Line-oriented helpers for the trace readers: a cursor over lines with 1-based numbers, a plain
// comma splitter and the wall-clock timestamp parser. Pure functions over strings. Thread-safe.
#ifndef SLUICE_SIM_WORKLOAD_TEXT_LINES_H_
#define SLUICE_SIM_WORKLOAD_TEXT_LINES_H_

#include <cstddef>
#include <optional>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace sluice::sim {

// Walks `text` line by line. Lines exclude the '\n' and a trailing '\r'; a UTF-8 byte-order mark
// on the first line is dropped. `text` must outlive the cursor and the views it returns.
class LineCursor {
 public:
  explicit LineCursor(absl::string_view text);
  // The next line, or nullopt at the end. A final line without '\n' is still returned.
  std::optional<absl::string_view> Next();
  // 1-based number of the line last returned by Next().
  int line() const { return line_; }
  // True when every remaining byte is whitespace (used to allow trailing blank lines only).
  bool RestIsBlank() const;

 private:
  absl::string_view text_;
  size_t pos_ = 0;
  int line_ = 0;
};

// Splits a CSV line at commas; each field loses surrounding whitespace and one pair of enclosing
// double quotes. Quoted fields containing commas are not supported (none of our traces use them).
std::vector<absl::string_view> SplitCsvLine(absl::string_view line);

// Parses `YYYY-mm-dd HH:MM:SS[.fffffffff]` (UTC; 'T' also accepted as the separator; fraction
// digits beyond nanoseconds are truncated). nullopt when the text is not of that form.
std::optional<absl::Time> ParseWallClock(absl::string_view text);

}  // namespace sluice::sim

#endif  // SLUICE_SIM_WORKLOAD_TEXT_LINES_H_
