// "\r" returns to the line start and "ESC [ K" erases what a longer previous line left behind.
#include "common/progress_line.h"

namespace sluice::common {

bool ProgressLine::Update(absl::Time now, std::string_view text, bool force) {
  if (!force && open_ && now - last_ < min_interval_) return false;
  out_ << '\r' << text << "\x1b[K";
  out_.flush();
  last_ = now;
  open_ = true;
  return true;
}

void ProgressLine::Finish() {
  if (!open_) return;
  out_ << '\n';
  out_.flush();
  open_ = false;
}

}  // namespace sluice::common
