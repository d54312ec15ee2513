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

// A model larger than one SCM_RIGHTS message of fds (more than 128 chunks) arrives whole, and
// the server does not keep a thread handle per connection it ever served.
TEST(FdServerTest, ManyChunksArriveInOrderAndConnectionThreadsAreReaped) {
  ParamStoreOptions o;
  o.capacity_bytes = 64 << 20;
  o.chunk_bytes = 64 << 10;  // a 20 MiB model is 320 chunks: three fd messages
  auto store = std::move(ParamStore::Create(o)).value();
  const int64_t bytes = (20 << 20) + 123;
  auto w = store->BeginPut("big", bytes);
  ASSERT_TRUE(w.ok());
  for (int64_t i = 0; i < bytes; i += 4096) (*w)->data()[i] = static_cast<char>(i / 4096 % 251);
  (*w)->data()[bytes - 1] = 'z';
  ASSERT_TRUE((*w)->Commit().ok());
  const std::string sock = "/tmp/sluice-fd-test-many-" + std::to_string(getpid()) + ".sock";
  auto server = ParamFdServer::Start(*store, sock);
  ASSERT_TRUE(server.ok()) << server.status();
  for (int round = 0; round < 10; ++round) {
    auto c = ParamClient::Open(sock, "big", round % 2 == 0);
    ASSERT_TRUE(c.ok()) << c.status();
    ASSERT_EQ((*c)->size(), bytes);
    for (int64_t i = 0; i < bytes - 1; i += 4096) {
      ASSERT_EQ((*c)->data()[i], static_cast<char>(i / 4096 % 251)) << i;
    }
    EXPECT_EQ((*c)->data()[bytes - 1], 'z');
  }
  for (int i = 0; i < 200 && store->List()[0].pins > 0; ++i) usleep(5000);
  EXPECT_LE((*server)->threads_held(), 2u);  // not ten
}

}  // namespace
}  // namespace sluice::runtime
