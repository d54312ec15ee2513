// StrictMap: key checks, typed getters, ranges and the file:line: field messages.
#include "sim/experiment/yaml_fields.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice::sim {
namespace {

using ::testing::HasSubstr;

const std::string kFile = "f.yaml";

absl::StatusOr<StrictMap> Map(const std::string& text) {
  return StrictMap::Create(YAML::Load(text), kFile, "sec", {"a", "b", "c"});
}

TEST(StrictMapTest, RejectsUnknownAndDuplicateKeysWithTheirLine) {
  absl::StatusOr<StrictMap> m = Map("a: 1\nzz: 2\n");
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(), HasSubstr("f.yaml:2: field 'sec.zz': unknown field"));
  m = Map("a: 1\nb: 2\na: 3\n");
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(), HasSubstr("f.yaml:3: field 'sec.a': duplicate field"));
  m = Map("- a\n- b\n");
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(), HasSubstr("field 'sec': must be a map"));
}

TEST(StrictMapTest, TypedGettersCheckTypesAndRanges) {
  absl::StatusOr<StrictMap> m = Map("a: 1.5\nb: x\nc: -2\n");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(*m->Double("a", Range::kPositive, std::nullopt), 1.5);
  EXPECT_THAT(m->Int("a", Range::kAny, std::nullopt).status().message(),
              HasSubstr("f.yaml:1: field 'sec.a': must be an integer, got '1.5'"));
  EXPECT_THAT(m->Double("b", Range::kAny, std::nullopt).status().message(),
              HasSubstr("f.yaml:2: field 'sec.b': must be a number, got 'x'"));
  EXPECT_THAT(m->Int("c", Range::kNonNegative, 0).status().message(),
              HasSubstr("f.yaml:3: field 'sec.c': must be >= 0, got -2"));
  EXPECT_THAT(m->Double("a", Range::kFraction, 0.5).status().message(),
              HasSubstr("must be in (0, 1]"));
  EXPECT_THAT(m->Bool("b", false).status().message(), HasSubstr("must be true or false"));
}

TEST(StrictMapTest, AbsentKeysUseTheFallbackOrAreRequired) {
  absl::StatusOr<StrictMap> m = Map("a:\nb: .inf\n");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(*m->Int("c", Range::kAny, 7), 7);
  EXPECT_THAT(m->String("c", std::nullopt).status().message(),
              HasSubstr("field 'sec.c': required field is missing"));
  // Present but empty is never the fallback.
  EXPECT_THAT(m->Double("a", Range::kAny, 1.0).status().message(),
              HasSubstr("f.yaml:1: field 'sec.a': has no value"));
  EXPECT_THAT(m->Double("b", Range::kAny, 1.0).status().message(),
              HasSubstr("must be a finite number"));
}

TEST(StrictMapTest, NamesAreRestrictedToFileAndCsvSafeCharacters) {
  EXPECT_TRUE(IsValidName("bert-base_2.v1"));
  EXPECT_TRUE(IsValidName("fast-gs+"));
  EXPECT_FALSE(IsValidName(""));
  EXPECT_FALSE(IsValidName("-x"));
  EXPECT_FALSE(IsValidName("a b"));
  EXPECT_FALSE(IsValidName("a,b"));
  EXPECT_FALSE(IsValidName(std::string(65, 'a')));
  absl::StatusOr<StrictMap> m = Map("a: has space\n");
  ASSERT_TRUE(m.ok());
  EXPECT_THAT(m->Name("a", std::nullopt).status().message(),
              HasSubstr("f.yaml:1: field 'sec.a': 'has space' is not a valid name"));
}

}  // namespace
}  // namespace sluice::sim
