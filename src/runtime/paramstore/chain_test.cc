// Multicast chains on localhost: in-process receivers, each with its own store (one per
// "agent"). Full delivery, a member dead before the transfer, a member killed mid-transfer
// (rerouted, resumed from the next member's stored prefix), a corrupted chunk, an orphaned
// partial transfer, and bad input.
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <random>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"
#include "runtime/paramstore/chain_receiver.h"
#include "runtime/paramstore/chain_sender.h"
#include "runtime/paramstore/chain_socket.h"
#include "runtime/paramstore/chain_test_util.h"
#include "runtime/paramstore/checksum.h"

namespace sluice::runtime {
namespace {

TEST(ChainTest, DeliversToEveryMemberInOrder) {
  auto origin = MakeStore();
  const std::string data = PutRandom(*origin, "llama", 9 * kMiB + 77, 1);
  std::vector<std::unique_ptr<Agent>> agents;
  std::vector<std::string> chain;
  for (int i = 0; i < 3; ++i) {
    agents.push_back(std::make_unique<Agent>());
    chain.push_back(agents.back()->receiver->address());
  }
  auto lease = origin->Acquire("llama");
  ASSERT_TRUE(lease.ok());
  auto r = SendChain(**lease, chain, FastOptions());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->completed, chain);
  EXPECT_TRUE(r->failed.empty()) << r->failed[0];
  for (auto& a : agents) EXPECT_TRUE(Contents(*a->store, "llama") == data);
}

// Receives land in the arena's pre-touched chunks (the arena spans several per chain chunk, so
// forwarding sends each chain chunk from several files), and an evicted model's chunks are
// reused warm by the next transfer.
TEST(ChainTest, ReceivesIntoTheWarmArenaAndReusesItsChunks) {
  auto origin = MakeStore();
  const std::string data = PutRandom(*origin, "m", 9 * kMiB + 77, 11);
  Agent a, b;
  const ParamArena& arena = b.store->arena();
  ASSERT_LT(arena.chunk_bytes(), FastOptions().chunk_bytes);
  EXPECT_EQ(arena.touched_chunks(), arena.chunk_count());
  auto lease = origin->Acquire("m");
  for (int round = 0; round < 3; ++round) {
    auto r = SendChain(**lease, {a.receiver->address(), b.receiver->address()}, FastOptions());
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_TRUE(r->failed.empty()) << r->failed[0];
    EXPECT_TRUE(Contents(*b.store, "m") == data);
    EXPECT_LE(arena.free_chunks(), arena.chunk_count() - arena.ChunksFor(9 * kMiB + 77));
    ASSERT_TRUE(a.store->Evict("m").ok());
    ASSERT_TRUE(b.store->Evict("m").ok());
    // The receiver's transfer lets go of its writer just after reporting done.
    for (int i = 0; i < 400 && arena.free_chunks() < arena.chunk_count(); ++i) {
      absl::SleepFor(absl::Milliseconds(5));
    }
    EXPECT_EQ(arena.free_chunks(), arena.chunk_count());
    EXPECT_EQ(arena.touched_chunks(), arena.chunk_count());
  }
}

// With a chain token configured, a sender without it (or with another) is refused before any
// byte is stored; members forward with their own token.
TEST(ChainTest, ReceiversRefuseAWrongToken) {
  auto origin = MakeStore();
  const std::string data = PutRandom(*origin, "m", 2 * kMiB, 12);
  Agent a(absl::Seconds(3), "s3cret"), b(absl::Seconds(3), "s3cret");
  auto lease = origin->Acquire("m");
  ChainOptions o = FastOptions();
  o.token = "guess";
  auto r = SendChain(**lease, {a.receiver->address()}, o);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->failed.size(), 1u);
  EXPECT_NE(r->failed[0].find("token"), std::string::npos) << r->failed[0];
  EXPECT_FALSE(a.store->Has("m"));
  EXPECT_EQ(a.receiver->hellos_refused(), 1);
  o.token = "s3cret";
  r = SendChain(**lease, {a.receiver->address(), b.receiver->address()}, o);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->failed.empty()) << r->failed[0];
  EXPECT_TRUE(Contents(*b.store, "m") == data);
}

// A long-lived receive port does not keep a thread handle per transfer it ever served.
TEST(ChainTest, ConnectionThreadsAreReaped) {
  auto origin = MakeStore();
  PutRandom(*origin, "m", kMiB, 13);
  Agent a;
  auto lease = origin->Acquire("m");
  for (int i = 0; i < 12; ++i) {
    auto r = SendChain(**lease, {a.receiver->address()}, FastOptions());
    ASSERT_TRUE(r.ok() && r->failed.empty());
    ASSERT_TRUE(a.store->Evict("m").ok());
  }
  EXPECT_LE(a.receiver->threads_held(), 2u);  // the last one or two, not twelve
}

TEST(ChainTest, SkipsMemberDeadBeforeTheTransfer) {
  auto origin = MakeStore();
  const std::string data = PutRandom(*origin, "m", 3 * kMiB, 2);
  Agent a, c;
  std::string dead;
  {
    Agent b;
    dead = b.receiver->address();
  }  // b's port is closed now
  auto lease = origin->Acquire("m");
  auto r = SendChain(**lease, {a.receiver->address(), dead, c.receiver->address()},
                     FastOptions());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->completed, (std::vector<std::string>{a.receiver->address(), c.receiver->address()}));
  ASSERT_EQ(r->failed.size(), 1u);
  EXPECT_EQ(r->failed[0].rfind(dead, 0), 0u) << r->failed[0];
  EXPECT_TRUE(Contents(*a.store, "m") == data);
  EXPECT_TRUE(Contents(*c.store, "m") == data);
}

// A source releasing one chunk every `period`, so that a kill lands mid-transfer.
class SlowSource : public ChunkSource {
 public:
  SlowSource(const ParamLease& lease, int64_t chunk_bytes, absl::Duration period)
      : lease_(lease), chunk_bytes_(chunk_bytes),
        chunks_((lease.size() + chunk_bytes - 1) / chunk_bytes), period_(period),
        start_(absl::Now()) {}
  FileSpan FileAt(int64_t offset) const override { return lease_.FileAt(offset); }
  int64_t WaitAvailable(int64_t have, absl::Duration wait) override {
    const absl::Time until = absl::Now() + wait;
    for (;;) {
      const int64_t n = std::min(chunks_, 1 + (absl::Now() - start_) / period_);
      if (n > have || absl::Now() >= until) return n;
      absl::SleepFor(absl::Milliseconds(1));
    }
  }
  uint64_t ChunkChecksum(int64_t i) override {
    const int64_t off = i * chunk_bytes_;
    return FrameChecksum(lease_.data() + off,
                      static_cast<size_t>(std::min(chunk_bytes_, lease_.size() - off)));
  }

 private:
  const ParamLease& lease_;
  const int64_t chunk_bytes_, chunks_;
  const absl::Duration period_;
  const absl::Time start_;
};


TEST(ChainTest, ReroutesAroundMemberKilledMidTransfer) {
  auto origin = MakeStore();
  const std::string data = PutRandom(*origin, "m", 24 * kMiB, 3);
  Agent a, b, c, d;
  auto lease = origin->Acquire("m");
  SlowSource src(**lease, kMiB, absl::Milliseconds(20));
  std::thread killer([&] {
    // Once c holds a partial copy (b forwarded some chunks), b dies.
    while (c.store->List().empty()) absl::SleepFor(absl::Milliseconds(2));
    absl::SleepFor(absl::Milliseconds(100));
    b.receiver->Stop();
  });
  const std::vector<std::string> members = {a.receiver->address(), b.receiver->address(),
                                            c.receiver->address(), d.receiver->address()};
  ChainDone done = ForwardToChain(src, HelloFor(**lease, 42), members, FastOptions());
  killer.join();
  EXPECT_EQ(done.completed, (std::vector<std::string>{members[0], members[2], members[3]}));
  ASSERT_EQ(done.failed.size(), 1u);
  EXPECT_EQ(done.failed[0].rfind(members[1], 0), 0u) << done.failed[0];
  EXPECT_TRUE(Contents(*a.store, "m") == data);
  EXPECT_TRUE(Contents(*c.store, "m") == data);
  EXPECT_TRUE(Contents(*d.store, "m") == data);
  EXPECT_FALSE(b.store->Has("m"));  // its partial copy was dropped, never served
  EXPECT_TRUE(b.store->List().empty());
}

// A source whose checksum of chunk 2 is wrong (corruption in flight).
class CorruptSource : public SlowSource {
 public:
  using SlowSource::SlowSource;
  uint64_t ChunkChecksum(int64_t i) override {
    return SlowSource::ChunkChecksum(i) ^ (i == 2 ? 1 : 0);
  }
};

TEST(ChainTest, CorruptChunkIsDetectedAndNothingIsServed) {
  auto origin = MakeStore();
  PutRandom(*origin, "m", 4 * kMiB, 4);
  Agent a;
  auto lease = origin->Acquire("m");
  CorruptSource src(**lease, kMiB, absl::ZeroDuration() + absl::Nanoseconds(1));
  ChainDone done = ForwardToChain(src, HelloFor(**lease, 7), {a.receiver->address()},
                                  FastOptions());
  EXPECT_TRUE(done.completed.empty());
  ASSERT_EQ(done.failed.size(), 1u);
  for (int i = 0; i < 200 && !a.store->List().empty(); ++i) absl::SleepFor(absl::Milliseconds(5));
  EXPECT_TRUE(a.store->List().empty());
  EXPECT_EQ(a.receiver->transfers_dropped(), 1);
}

TEST(ChainTest, OrphanedPartialTransferIsDropped) {
  auto origin = MakeStore();
  PutRandom(*origin, "m", 8 * kMiB, 5);
  Agent a(absl::Milliseconds(300));
  auto lease = origin->Acquire("m");
  // Send the hello and two chunks by hand, then vanish.
  ChainHello h = HelloFor(**lease, 9);
  h.to = a.receiver->address();
  auto fd = ConnectTo(h.to, absl::Seconds(1), absl::Seconds(1));
  ASSERT_TRUE(fd.ok());
  ASSERT_TRUE(WriteHello(*fd, h).ok());
  ASSERT_TRUE(ReadWelcome(*fd).ok());
  for (int64_t i = 0; i < 2; ++i) {
    const uint64_t sum = FrameChecksum((*lease)->data() + i * kMiB, kMiB);
    ASSERT_TRUE(WriteFrameHeader(*fd, {i, kMiB, sum}).ok());
    ASSERT_TRUE(SendSegmentRange(
                    *fd, [&](int64_t o) { return (*lease)->FileAt(o); }, i * kMiB, kMiB)
                    .ok());
  }
  close(*fd);
  EXPECT_FALSE(a.store->Has("m"));
  for (int i = 0; i < 400 && !a.store->List().empty(); ++i) absl::SleepFor(absl::Milliseconds(5));
  EXPECT_TRUE(a.store->List().empty());
  EXPECT_EQ(a.receiver->transfers_dropped(), 1);
}

TEST(ChainTest, MemberThatAlreadyHoldsTheModelIsSkipped) {
  auto origin = MakeStore();
  const std::string data = PutRandom(*origin, "m", 2 * kMiB, 6);
  Agent a, b;
  PutRandom(*a.store, "m", 2 * kMiB, 6);
  auto lease = origin->Acquire("m");
  auto r = SendChain(**lease, {a.receiver->address(), b.receiver->address()}, FastOptions());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->completed.size(), 2u);
  EXPECT_TRUE(Contents(*b.store, "m") == data);
}

TEST(ChainTest, BadChainsAreRejectedNamingTheField) {
  auto origin = MakeStore();
  PutRandom(*origin, "m", kMiB, 7);
  auto lease = origin->Acquire("m");
  EXPECT_TRUE(absl::IsInvalidArgument(SendChain(**lease, {}).status()));
  absl::Status s = SendChain(**lease, {"127.0.0.1:1", "nonsense"}).status();
  EXPECT_NE(s.message().find("chain[1]"), std::string::npos) << s;
  s = SendChain(**lease, {"127.0.0.1:9", "127.0.0.1:9"}).status();
  EXPECT_NE(s.message().find("twice"), std::string::npos) << s;
  ChainOptions o;
  o.chunk_bytes = 10;
  EXPECT_TRUE(absl::IsInvalidArgument(SendChain(**lease, {"127.0.0.1:9"}, o).status()));
}

}  // namespace
}  // namespace sluice::runtime
