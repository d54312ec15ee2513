// One self-rewriting status line on a terminal (carriage return + erase to end of line), throttled
// to a few updates per second, for long commands: `sluice sim run` and `sluice load`. The caller
// decides whether the stream is a terminal (isatty) and passes the time in; this class reads no
// clock. Thread-compatible: one caller at a time.
#ifndef SLUICE_COMMON_PROGRESS_LINE_H_
#define SLUICE_COMMON_PROGRESS_LINE_H_

#include <ostream>
#include <string_view>

#include "absl/time/time.h"

namespace sluice::common {

class ProgressLine {
 public:
  // `out` must outlive this. At most one write per `min_interval` (Update with force excepted).
  explicit ProgressLine(std::ostream& out, absl::Duration min_interval = absl::Milliseconds(250))
      : out_(out), min_interval_(min_interval) {}
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;
  ~ProgressLine() { Finish(); }

  // Rewrites the line with `text` when `force` or when min_interval has passed since the last
  // write (the first Update always writes). Returns whether it wrote.
  bool Update(absl::Time now, std::string_view text, bool force = false);
  // Ends the line with a newline when anything was written since the last Finish.
  void Finish();

 private:
  std::ostream& out_;
  const absl::Duration min_interval_;
  absl::Time last_ = absl::InfinitePast();
  bool open_ = false;
};

}  // namespace sluice::common

#endif  // SLUICE_COMMON_PROGRESS_LINE_H_
