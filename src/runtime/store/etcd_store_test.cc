// EtcdStore beyond the typed suites: unreachable and restarting etcd (clear errors, no crash, a
// watch that resumes exactly once), and the gateway JSON (etcd_json.h) on odd input.
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

#include "runtime/store/etcd_json.h"
#include "runtime/store/etcd_store.h"
#include "runtime/store/testing/etcd_fixture.h"
#include "runtime/store/testing/store_factories.h"

namespace sluice::runtime {
namespace {

using ::testing::HasSubstr;

TEST(EtcdStoreTest, UnreachableEtcdIsUnavailableNamingTheEndpoint) {
  EtcdStoreOptions options;
  options.request_timeout = absl::Seconds(2);
  // Port 1 on loopback: nothing listens there.
  absl::StatusOr<std::unique_ptr<EtcdStore>> s = EtcdStore::Open("127.0.0.1:1", options);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kUnavailable) << s.status();
  EXPECT_THAT(s.status().message(), HasSubstr("etcd store 127.0.0.1:1"));
}

TEST(EtcdStoreTest, MalformedEndpointIsInvalidArgument) {
  absl::StatusOr<std::unique_ptr<EtcdStore>> s = EtcdStore::Open("no port here");
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << s.status();
  EXPECT_THAT(s.status().message(), HasSubstr("no port here"));
}

TEST(EtcdStoreTest, FailsCleanlyWhileEtcdIsDownAndTheWatchResumesExactlyOnce) {
  if (std::string missing = EtcdProcess::Missing(); !missing.empty())
    GTEST_SKIP() << missing;
  absl::StatusOr<std::unique_ptr<EtcdProcess>> etcd = EtcdProcess::Start();
  ASSERT_TRUE(etcd.ok()) << etcd.status();
  EtcdStoreOptions options;
  options.request_timeout = absl::Seconds(2);
  options.watch_retry = absl::Milliseconds(50);
  absl::StatusOr<std::unique_ptr<EtcdStore>> s = EtcdStore::Open((*etcd)->endpoint(), options);
  ASSERT_TRUE(s.ok()) << s.status();
  EtcdStore& store = **s;
  absl::StatusOr<std::unique_ptr<StoreWatch>> watch = store.WatchPrefix("n/", *store.Revision());
  ASSERT_TRUE(watch.ok()) << watch.status();
  ASSERT_TRUE(store.Put("n/a", "1").ok());
  std::vector<WatchEvent> seen;
  auto collect = [&](size_t n) {
    return EventuallyTrue(true, [&] {
      absl::StatusOr<std::vector<WatchEvent>> got = (*watch)->Poll();
      EXPECT_TRUE(got.ok()) << got.status();
      if (got.ok())
        seen.insert(seen.end(), got->begin(), got->end());
      return seen.size() >= n;
    });
  };
  ASSERT_TRUE(collect(1));

  (*etcd)->Kill();
  absl::Status down = store.Put("n/b", "lost");
  EXPECT_EQ(down.code(), absl::StatusCode::kUnavailable) << down;
  EXPECT_THAT(down.message(), HasSubstr((*etcd)->endpoint()));
  EXPECT_FALSE(store.Get("n/a").ok());
  EXPECT_TRUE((*watch)->Poll().ok()) << "a watch waits for etcd instead of breaking";

  ASSERT_TRUE((*etcd)->Restart().ok());
  ASSERT_TRUE(EventuallyTrue(true, [&] { return store.Put("n/c", "3").ok(); }));
  ASSERT_TRUE(collect(2));
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].key, "n/a");
  EXPECT_EQ(seen[1].key, "n/c");
  EXPECT_EQ(*store.Get("n/a"), "1") << "data survives the restart";
}

TEST(EtcdJsonTest, PrefixEndIncrementsTheLastByteBelow0xff) {
  EXPECT_EQ(internal::PrefixEnd("fn/"), "fn0");
  EXPECT_EQ(internal::PrefixEnd(std::string("a\xff", 2)), "b");
  EXPECT_EQ(internal::PrefixEnd(std::string("\xff\xff", 2)), std::string(1, '\0'));
}

TEST(EtcdJsonTest, ErrorsMapEtcdsGrpcCodesAndNameTheEndpoint) {
  absl::StatusOr<nlohmann::json> r = internal::ParseEtcdAnswer(
      "h:1", "/v3/kv/put", 400,
      R"({"error":"etcdserver: requested lease not found",)"
      R"("message":"etcdserver: requested lease not found","code":5})");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(r.status().message(), HasSubstr("etcd store h:1 /v3/kv/put: etcdserver: requested"));
  r = internal::ParseEtcdAnswer("h:1", "/v3/kv/range", 502, "<html>bad gateway</html>");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(r.status().message(), HasSubstr("bad gateway"));
  r = internal::ParseEtcdAnswer("h:1", "/v3/kv/range", 200, R"({"error": {"code": "x"}})");
  EXPECT_FALSE(r.ok()) << "odd types read as defaults, never throw";
}

TEST(EtcdJsonTest, WatchMessagesCarryEventsOrEndTheWatch) {
  absl::StatusOr<internal::WatchMessage> m = internal::ParseWatchMessage(
      "h:1", R"({"result":{"header":{"revision":"4"},"events":[)"
             R"({"kv":{"key":"Zm9v","mod_revision":"3","version":"2","value":"YmF6"}},)"
             R"({"type":"DELETE","kv":{"key":"Zm9v","mod_revision":"4"}}]}})");
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->events.size(), 2u);
  EXPECT_EQ(m->events[0].key, "foo");
  EXPECT_EQ(m->events[0].value, "baz");
  EXPECT_EQ(m->events[0].version, 2);
  EXPECT_EQ(m->events[0].revision, 3);
  EXPECT_EQ(m->events[1].type, WatchEvent::Type::kDelete);
  EXPECT_EQ(m->events[1].revision, 4);
  m = internal::ParseWatchMessage(
      "h:1", R"({"result":{"header":{},"canceled":true,"compact_revision":"4"}})");
  EXPECT_EQ(m.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_THAT(m.status().message(), HasSubstr("compacted up to revision 4"));
  EXPECT_FALSE(internal::ParseWatchMessage("h:1", "{not json").ok());
  m = internal::ParseWatchMessage("h:1", R"({"result":{"canceled":true,"cancel_reason":"x"}})");
  EXPECT_EQ(m.status().code(), absl::StatusCode::kFailedPrecondition) << "breaks the watch";
  EXPECT_FALSE(internal::ParseWatchMessage("h:1", R"({"result":{"events":[{"kv":{"key":"!!"}}]}})")
                   .ok()) << "a key that is not base64";
}

}  // namespace
}  // namespace sluice::runtime
