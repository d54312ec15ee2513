// SplitBatchResponse against nlohmann-json as the reference: seeded random batch answers split
// into exactly the elements nlohmann sees, with error/id flags; malformed bodies rejected; the
// id echo keeps the response valid JSON.
#include "runtime/gateway/batch_response.h"

#include <random>

#include "gtest/gtest.h"

#include "nlohmann/json.hpp"

namespace sluice::runtime {
namespace {

using nlohmann::json;

json RandomValue(std::mt19937_64& rng, int depth) {
  switch (rng() % (depth > 2 ? 4 : 6)) {
    case 0:
      return static_cast<int64_t>(rng() % 2000) - 1000;
    case 1:
      return std::string("s\"q\\ {[,]}") + std::to_string(rng() % 10);
    case 2:
      return rng() % 2 == 0;
    case 3:
      return nullptr;
    case 4: {
      json a = json::array();
      for (int i = static_cast<int>(rng() % 4); i > 0; --i)
        a.push_back(RandomValue(rng, depth + 1));
      return a;
    }
    default: {
      json o = json::object();
      for (int i = static_cast<int>(rng() % 4); i > 0; --i)
        o["k" + std::to_string(rng() % 6)] = RandomValue(rng, depth + 1);
      return o;
    }
  }
}

TEST(BatchResponseTest, SplitsLikeAFullParserOnRandomBodies) {
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    std::mt19937_64 rng(seed);
    json responses = json::array();
    for (int i = static_cast<int>(rng() % 6); i > 0; --i) {
      json r = RandomValue(rng, 1);
      if (r.is_object() && rng() % 3 == 0)
        r["error"] = "boom";
      if (r.is_object() && rng() % 3 == 0)
        r["id"] = "x";
      responses.push_back(r);
    }
    json doc = {{"exec_ms", 1.5}, {"responses", responses}, {"z", {{"responses", 1}}}};
    const std::string body = rng() % 2 == 0 ? doc.dump() : doc.dump(2);
    absl::StatusOr<std::vector<BatchItem>> items = SplitBatchResponse(body);
    ASSERT_TRUE(items.ok()) << "seed " << seed << ": " << items.status() << "\n" << body;
    ASSERT_EQ(items->size(), responses.size()) << "seed " << seed;
    for (size_t i = 0; i < items->size(); ++i) {
      const BatchItem& item = (*items)[i];
      ASSERT_EQ(json::parse(item.text), responses[i]) << "seed " << seed;
      ASSERT_EQ(item.has_error, responses[i].is_object() && responses[i].contains("error"));
      ASSERT_EQ(item.has_id, responses[i].is_object() && responses[i].contains("id"));
      const json echoed = json::parse(WithRequestId(item, "req"));
      if (responses[i].is_object()) {
        ASSERT_EQ(echoed["id"], responses[i].value("id", "req")) << "seed " << seed;
      }
    }
  }
}

TEST(BatchResponseTest, EchoesIntoEmptyObjectsAndRejectsMalformedBodies) {
  absl::StatusOr<std::vector<BatchItem>> items = SplitBatchResponse(R"({"responses": [{ }]})");
  ASSERT_TRUE(items.ok());
  EXPECT_EQ(json::parse(WithRequestId((*items)[0], "a")), json({{"id", "a"}}));
  EXPECT_EQ(WithRequestId((*items)[0], std::nullopt), "{ }");
  for (const char* bad :
       {"", "[]", "{}", R"({"responses": {}})", R"({"responses": [1,]})",
        R"({"responses": [{"a": 1}])", R"({"responses": ["x]})", R"({"responses": []} trailing)"}) {
    EXPECT_FALSE(SplitBatchResponse(bad).ok()) << bad;
  }
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_FALSE(SplitBatchResponse(R"({"responses": [)" + deep + "]}").ok());
}

}  // namespace
}  // namespace sluice::runtime
