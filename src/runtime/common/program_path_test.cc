// Tests of FindProgramPath's precedence: option, environment, fallbacks.
#include "runtime/common/program_path.h"

#include <stdlib.h>

#include "gtest/gtest.h"

namespace sluice::runtime {
namespace {

TEST(ProgramPathTest, OptionThenEnvironmentThenFirstExistingFallback) {
  unsetenv("SLUICE_PROGRAM_PATH_TEST");
  EXPECT_EQ(FindProgramPath("/opt/x", "SLUICE_PROGRAM_PATH_TEST", {"/"}), "/opt/x");
  EXPECT_EQ(FindProgramPath("", "SLUICE_PROGRAM_PATH_TEST", {"/no/such/path", "/"}), "/");
  EXPECT_EQ(FindProgramPath("", "SLUICE_PROGRAM_PATH_TEST", {"/no/such/path"}), "");
  setenv("SLUICE_PROGRAM_PATH_TEST", "/from/env", 1);
  EXPECT_EQ(FindProgramPath("", "SLUICE_PROGRAM_PATH_TEST", {"/"}), "/from/env");
  setenv("SLUICE_PROGRAM_PATH_TEST", "", 1);  // empty counts as unset
  EXPECT_EQ(FindProgramPath("", "SLUICE_PROGRAM_PATH_TEST", {"/"}), "/");
  unsetenv("SLUICE_PROGRAM_PATH_TEST");
}

TEST(ProgramPathTest, ExecutableDirIsTheTestBinarysDirectory) {
  const std::string dir = ExecutableDir();
  ASSERT_FALSE(dir.empty());
  EXPECT_EQ(dir.front(), '/');
  EXPECT_NE(dir.find("runtime/common"), std::string::npos) << dir;
}

}  // namespace
}  // namespace sluice::runtime
