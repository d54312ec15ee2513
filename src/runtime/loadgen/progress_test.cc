// The `sluice load` live line on its own.
#include "runtime/loadgen/progress.h"

#include "gtest/gtest.h"

namespace sluice::runtime {
namespace {

TEST(LoadProgressTest, FormatsCountsAndP99) {
  LoadProgress p{"classifier", absl::Milliseconds(12340), absl::Seconds(42), 1200, 1188, 2,
                 absl::Microseconds(45100)};
  EXPECT_EQ(FormatLoadProgress(p),
            "load classifier: 12.3/42.0 s  sent 1200  ok 1188  errors 2  p99 45.1 ms");
  p.p99.reset();
  p.ok = 0;
  EXPECT_EQ(FormatLoadProgress(p),
            "load classifier: 12.3/42.0 s  sent 1200  ok 0  errors 2  p99 -");
}

}  // namespace
}  // namespace sluice::runtime
