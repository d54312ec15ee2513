// PlatformTest: the GoogleTest fixture of the end-to-end tests. Each test gets its own Platform
// (ctest runs every test in its own process anyway), started before the test body and torn down
// on every path by the fixture. Skips when the emulated device or the examples were not built
// (hosts without the CUDA headers); any other start-up failure fails the test.
#ifndef SLUICE_TESTS_E2E_PLATFORM_TEST_BASE_H_
#define SLUICE_TESTS_E2E_PLATFORM_TEST_BASE_H_

#include <unistd.h>

#include <memory>
#include <string>

#include "gtest/gtest.h"

#include "platform.h"

namespace sluice::runtime::e2e {

class PlatformTest : public ::testing::Test {
 protected:
  virtual PlatformConfig Config() const { return {}; }

  void SetUp() override {
    const std::string classifier = Platform::BinDir() + "/sluice-example-classifier";
    if (access(classifier.c_str(), X_OK) != 0) {
      GTEST_SKIP() << classifier << " not built (no CUDA headers on this host)";
    }
    absl::StatusOr<std::unique_ptr<Platform>> p = Platform::Start(Config());
    if (!p.ok() && absl::IsNotFound(p.status())) {
      GTEST_SKIP() << p.status();  // sluice-spin / the emulated driver not built
    }
    ASSERT_TRUE(p.ok()) << p.status();
    p_ = *std::move(p);
  }
  void TearDown() override { p_.reset(); }

  // Deploys `yaml` (201 expected) and waits for `n` ready instances of `name`.
  Json DeployAndWait(const std::string& yaml, const std::string& name, int n) {
    absl::StatusOr<http::Response> r = p_->Deploy(yaml);
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok())
      return Json();
    EXPECT_EQ(r->status, 201) << r->body;
    absl::StatusOr<Json> f = p_->WaitReadyInstances(name, n);
    EXPECT_TRUE(f.ok()) << f.status();
    return f.ok() ? *f : Json();
  }

  std::unique_ptr<Platform> p_;
};

}  // namespace sluice::runtime::e2e

#endif  // SLUICE_TESTS_E2E_PLATFORM_TEST_BASE_H_
