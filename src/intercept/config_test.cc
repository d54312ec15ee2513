// ParseConfig over table-driven environments: defaults, valid values, and invalid values that
// are named in the warning and replaced by defaults.
#include "intercept/config.h"

#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"

#include "intercept/protocol.h"

namespace sluice::intercept {
namespace {

std::map<std::string, std::string>* g_env = nullptr;
std::vector<std::string>* g_warnings = nullptr;

const char* Lookup(const char* name) {
  auto it = g_env->find(name);
  return it == g_env->end() ? nullptr : it->second.c_str();
}
void Warn(const char* message) {
  g_warnings->push_back(message);
}

class ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_env = &env_;
    g_warnings = &warnings_;
  }
  int Parse() { return ParseConfig(&Lookup, &config_, &Warn); }
  std::map<std::string, std::string> env_;
  std::vector<std::string> warnings_;
  Config config_;
};

TEST_F(ConfigTest, DefaultsWhenUnset) {
  EXPECT_EQ(Parse(), 0);
  EXPECT_STREQ(config_.real_libcuda, "");
  EXPECT_STREQ(config_.token_socket, "");
  EXPECT_EQ(config_.instance_id, -1);
  EXPECT_EQ(config_.mem_limit_bytes, 0);
  EXPECT_EQ(config_.fail_policy, -1);
  EXPECT_EQ(config_.fail_timeout_ns, -1);
  EXPECT_FALSE(config_.verbose);
}

TEST_F(ConfigTest, ParsesEveryVariable) {
  env_ = {{"SLUICE_REAL_LIBCUDA", "/opt/driver/libcuda.so.1"},
          {"SLUICE_TOKEN_SOCKET", "/run/sluice/token.sock"},
          {"SLUICE_GPU_UUID", "GPU-01234567-89ab-cdef-0123-456789abcdef"},
          {"SLUICE_INSTANCE_ID", "42"},
          {"SLUICE_MEM_LIMIT_BYTES", "1073741824"},
          {"SLUICE_FAIL_POLICY", "closed"},
          {"SLUICE_FAIL_TIMEOUT_MS", "250"},
          {"SLUICE_INTERCEPT_VERBOSE", "1"}};
  EXPECT_EQ(Parse(), 0);
  EXPECT_STREQ(config_.real_libcuda, "/opt/driver/libcuda.so.1");
  EXPECT_STREQ(config_.token_socket, "/run/sluice/token.sock");
  EXPECT_STREQ(config_.gpu_uuid, "GPU-01234567-89ab-cdef-0123-456789abcdef");
  EXPECT_EQ(config_.instance_id, 42);
  EXPECT_EQ(config_.mem_limit_bytes, int64_t{1} << 30);
  EXPECT_EQ(config_.fail_policy, SLUICE_FAIL_CLOSED);
  EXPECT_EQ(config_.fail_timeout_ns, 250 * 1000000LL);
  EXPECT_TRUE(config_.verbose);
  env_["SLUICE_FAIL_POLICY"] = "open";
  EXPECT_EQ(Parse(), 0);
  EXPECT_EQ(config_.fail_policy, SLUICE_FAIL_OPEN);
}

TEST_F(ConfigTest, InvalidValuesAreNamedAndDefaulted) {
  struct Case {
    const char* name;
    std::string value;
  };
  const Case cases[] = {
      {"SLUICE_INSTANCE_ID", "12abc"},
      {"SLUICE_MEM_LIMIT_BYTES", "-5"},
      {"SLUICE_MEM_LIMIT_BYTES", "1e9"},
      {"SLUICE_FAIL_POLICY", "maybe"},
      {"SLUICE_FAIL_TIMEOUT_MS", "0"},
      {"SLUICE_FAIL_TIMEOUT_MS", ""},
      {"SLUICE_TOKEN_SOCKET", std::string(200, 'x')},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.name) + "=" + c.value);
    env_ = {{c.name, c.value}};
    warnings_.clear();
    EXPECT_EQ(Parse(), 1);
    ASSERT_EQ(warnings_.size(), 1u);
    EXPECT_NE(warnings_[0].find(c.name), std::string::npos) << warnings_[0];
    Config defaults;
    EXPECT_EQ(config_.instance_id, defaults.instance_id);
    EXPECT_EQ(config_.mem_limit_bytes, defaults.mem_limit_bytes);
    EXPECT_EQ(config_.fail_policy, defaults.fail_policy);
    EXPECT_EQ(config_.fail_timeout_ns, defaults.fail_timeout_ns);
    EXPECT_STREQ(config_.token_socket, "");
  }
}

TEST(ParseInt64Test, StrictWholeString) {
  int64_t v = 0;
  EXPECT_TRUE(ParseInt64("123", 0, 1000, &v));
  EXPECT_EQ(v, 123);
  EXPECT_FALSE(ParseInt64("123 ", 0, 1000, &v));
  EXPECT_FALSE(ParseInt64("", 0, 1000, &v));
  EXPECT_FALSE(ParseInt64("1001", 0, 1000, &v));
  EXPECT_FALSE(ParseInt64("99999999999999999999", 0, INT64_MAX, &v));
}

}  // namespace
}  // namespace sluice::intercept
