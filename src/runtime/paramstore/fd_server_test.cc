// ParamFdServer / ParamClient: an instance gets the sealed segment over SCM_RIGHTS, the
// connection pins the model until it closes, unknown models get a clear error.
#include "runtime/paramstore/fd_server.h"

#include <unistd.h>

#include <cstring>

#include "gtest/gtest.h"

namespace sluice::runtime {
namespace {

TEST(FdServerTest, HandsOutSealedSegmentAndPinsWhileOpen) {
  ParamStoreOptions o;
  o.capacity_bytes = 8 << 20;
  auto store = std::move(ParamStore::Create(o)).value();
  auto w = store->BeginPut("m", 1 << 20);
  ASSERT_TRUE(w.ok());
  std::memset((*w)->data(), 'p', 1 << 20);
  ASSERT_TRUE((*w)->Commit().ok());
  const std::string sock = "/tmp/sluice-fd-test-" + std::to_string(getpid()) + ".sock";
  auto server = ParamFdServer::Start(*store, sock);
  ASSERT_TRUE(server.ok()) << server.status();
  {
    auto c = ParamClient::Open(sock, "m");
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ((*c)->size(), 1 << 20);
    EXPECT_EQ((*c)->data()[12345], 'p');
    EXPECT_EQ(store->List()[0].pins, 1);
    EXPECT_TRUE(absl::IsFailedPrecondition(store->Evict("m")));
  }
  for (int i = 0; i < 200 && store->List()[0].pins > 0; ++i) usleep(5000);
  EXPECT_EQ(store->List()[0].pins, 0);
  absl::Status s = ParamClient::Open(sock, "nope").status();
  EXPECT_TRUE(absl::IsNotFound(s)) << s;
  EXPECT_NE(s.message().find("nope"), std::string::npos);
  EXPECT_TRUE(store->Evict("m").ok());
}

}  // namespace
}  // namespace sluice::runtime
