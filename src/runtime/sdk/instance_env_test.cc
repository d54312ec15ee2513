// Tests of ReadInstanceAddress: defaults, overrides and PORT errors.
#include "runtime/sdk/instance_env.h"

#include <stdlib.h>

#include "gtest/gtest.h"

namespace sluice::runtime {
namespace {

TEST(InstanceEnvTest, ReadsNameHostAndPortWithDefaults) {
  unsetenv("SLUICE_FUNCTION");
  unsetenv("SLUICE_HOST");
  setenv("PORT", "7101", 1);
  absl::StatusOr<InstanceAddress> a = ReadInstanceAddress("dflt");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->name, "dflt");
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 7101);
  setenv("SLUICE_FUNCTION", "resnet", 1);
  setenv("SLUICE_HOST", "0.0.0.0", 1);
  a = ReadInstanceAddress("dflt");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->name, "resnet");
  EXPECT_EQ(a->host, "0.0.0.0");
  unsetenv("SLUICE_FUNCTION");
  unsetenv("SLUICE_HOST");
}

TEST(InstanceEnvTest, PortMustBeAPortNumber) {
  for (const char* bad : {"", "x", "-1", "65536", "80x"}) {
    setenv("PORT", bad, 1);
    absl::StatusOr<InstanceAddress> a = ReadInstanceAddress("f");
    ASSERT_FALSE(a.ok()) << bad;
    EXPECT_NE(a.status().message().find("environment PORT"), absl::string_view::npos);
  }
  unsetenv("PORT");
  EXPECT_NE(ReadInstanceAddress("f").status().message().find("(unset)"), absl::string_view::npos);
}

}  // namespace
}  // namespace sluice::runtime
