#include "common/status.h"

#include "gtest/gtest.h"

namespace sluice::common {
namespace {

absl::StatusOr<int> Half(int x) {
  if (x % 2 != 0) {
    return absl::InvalidArgumentError("odd");
  }
  return x / 2;
}
absl::StatusOr<int> Quarter(int x) {
  SLUICE_ASSIGN_OR_RETURN(int h, Half(x));
  SLUICE_ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}
absl::Status Check(int x) {
  SLUICE_RETURN_IF_ERROR(Half(x).status());
  return absl::OkStatus();
}

TEST(StatusTest, MacrosPropagate) {
  EXPECT_EQ(*Quarter(8), 2);
  EXPECT_FALSE(Quarter(6).ok());
  EXPECT_TRUE(Check(2).ok());
  EXPECT_EQ(Check(3).code(), absl::StatusCode::kInvalidArgument);
}

TEST(StatusTest, InputErrorNamesFileLineAndField) {
  absl::Status s = InputError({"exp.yaml", 12}, "rate", "must be >= 0");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "exp.yaml:12: field 'rate': must be >= 0");
  EXPECT_EQ(InputError({"t.csv", 0}, "", "empty").message(), "t.csv: empty");
}

TEST(StatusDeathTest, CheckAborts) {
  EXPECT_DEATH(SLUICE_CHECK(1 == 2), "SLUICE_CHECK failed");
}

}  // namespace
}  // namespace sluice::common
