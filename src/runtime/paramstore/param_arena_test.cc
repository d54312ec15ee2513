// ParamArena and arena-backed segments: carve/free/reuse over many seeded random sequences (no
// two live segments share a chunk or a byte, nothing leaks, freed chunks come back warm), the
// zeroed tail, sealed chunks an instance can map but never write, background filling, bad
// options, and the ThreadSet that servers use to reap their connection threads.
#include "runtime/paramstore/param_arena.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <map>
#include <random>
#include <set>

#include "gtest/gtest.h"
#include "runtime/paramstore/segment.h"
#include "runtime/paramstore/thread_set.h"

namespace sluice::runtime {
namespace {

constexpr int64_t kKiB = 1024;

std::shared_ptr<ParamArena> MakeArena(int64_t capacity, int64_t chunk, Pretouch p) {
  ParamArenaOptions o;
  o.capacity_bytes = capacity;
  o.chunk_bytes = chunk;
  o.pretouch = p;
  absl::StatusOr<std::shared_ptr<ParamArena>> a = ParamArena::Create(o);
  EXPECT_TRUE(a.ok()) << a.status();
  return a.ok() ? *a : nullptr;
}

// dup()s of a segment's chunk fds, as an instance would receive them.
std::vector<int> DupFds(const ParamSegment& s) {
  std::vector<int> out;
  for (int fd : s.fds()) out.push_back(dup(fd));
  return out;
}

TEST(ParamArenaTest, RandomCarveFreeReuseNeverOverlapsOrLeaks) {
  for (uint32_t seed = 1; seed <= 10; ++seed) {
    SCOPED_TRACE(testing::Message() << "seed " << seed);
    const Pretouch p = seed % 3 == 0 ? Pretouch::kNone : Pretouch::kAtStart;
    auto arena = MakeArena(64 * 16 * kKiB, 16 * kKiB, p);  // 64 chunks
    ASSERT_NE(arena, nullptr);
    std::mt19937 rng(seed);
    std::map<int, std::unique_ptr<ParamSegment>> live;  // key: fill byte
    for (int step = 0; step < 120; ++step) {
      if (!live.empty() && rng() % 3 == 0) {
        auto it = live.begin();
        std::advance(it, static_cast<long>(rng() % live.size()));
        live.erase(it);
        continue;
      }
      const int64_t bytes = 1 + static_cast<int64_t>(rng() % (10 * 16 * kKiB));
      absl::StatusOr<std::unique_ptr<ParamSegment>> s = ParamSegment::Create(arena, bytes);
      if (!s.ok()) {
        ASSERT_TRUE(absl::IsResourceExhausted(s.status())) << s.status();
        ASSERT_LT(arena->free_chunks(), arena->ChunksFor(bytes));  // refused only when full
        continue;
      }
      const int key = step % 250 + 1;
      ASSERT_EQ((*s)->size(), bytes);
      for (int64_t i = bytes; i < arena->RoundUp(bytes); ++i) ASSERT_EQ((*s)->data()[i], 0);
      std::memset((*s)->mutable_data(), key, static_cast<size_t>(bytes));
      ASSERT_TRUE((*s)->Seal().ok());
      live[key] = std::move(*s);
      // Every live segment still holds only its own bytes, and no chunk is in two of them.
      std::set<int> fds;
      int64_t held = 0;
      for (const auto& [k, seg] : live) {
        const char* d = seg->data();
        for (int64_t i = 0; i < seg->size(); i += 997) ASSERT_EQ(d[i], static_cast<char>(k));
        ASSERT_EQ(d[seg->size() - 1], static_cast<char>(k));
        for (int fd : seg->fds()) ASSERT_TRUE(fds.insert(fd).second) << "chunk shared";
        held += arena->ChunksFor(seg->size());
      }
      ASSERT_EQ(held + arena->free_chunks(), arena->chunk_count());  // no leak
    }
    live.clear();
    EXPECT_EQ(arena->free_chunks(), arena->chunk_count());
  }
}

TEST(ParamArenaTest, PretouchAtStartWarmsEveryChunkAndReuseKeepsThemWarm) {
  auto arena = MakeArena(1 << 20, 64 * kKiB, Pretouch::kAtStart);
  ASSERT_NE(arena, nullptr);
  EXPECT_EQ(arena->chunk_count(), 16);
  EXPECT_EQ(arena->touched_chunks(), 16);
  { auto s = ParamSegment::Create(arena, 1 << 20); ASSERT_TRUE(s.ok()) << s.status(); }
  EXPECT_EQ(arena->free_chunks(), 16);
  EXPECT_EQ(arena->touched_chunks(), 16);
}

TEST(ParamArenaTest, BackgroundFillMakesEveryChunkAndTakeDoesNotWaitForIt) {
  auto arena = MakeArena(4 << 20, 64 * kKiB, Pretouch::kBackground);
  ASSERT_NE(arena, nullptr);
  auto s = ParamSegment::Create(arena, 2 << 20);  // may make chunks itself
  ASSERT_TRUE(s.ok()) << s.status();
  arena->WaitFilled();
  EXPECT_EQ(arena->free_chunks(), arena->chunk_count() - 32);
  s->reset();
  EXPECT_EQ(arena->free_chunks(), arena->chunk_count());
}

TEST(ParamArenaTest, InstanceMapsChunksReadOnlyAndCannotWrite) {
  auto arena = MakeArena(1 << 20, 64 * kKiB, Pretouch::kAtStart);
  ASSERT_NE(arena, nullptr);
  const int64_t bytes = 200 * kKiB + 5;  // 4 chunks, the last partly used
  auto s = ParamSegment::Create(arena, bytes);
  ASSERT_TRUE(s.ok());
  for (int64_t i = 0; i < bytes; ++i) (*s)->mutable_data()[i] = static_cast<char>(i * 7);
  ASSERT_TRUE((*s)->Seal().ok());
  EXPECT_EQ((*s)->mutable_data(), nullptr);
  EXPECT_EQ(fcntl((*s)->fds()[0], F_GET_SEALS) & 0x0010, 0x0010);  // F_SEAL_FUTURE_WRITE
  for (int fd : (*s)->fds()) {
    EXPECT_EQ(mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0), MAP_FAILED);
    EXPECT_EQ(pwrite(fd, "x", 1, 0), -1);
    EXPECT_EQ(ftruncate(fd, 0), -1);
  }
  auto view = ParamSegment::MapChunksReadOnly(DupFds(**s), arena->chunk_bytes(), bytes);
  ASSERT_TRUE(view.ok()) << view.status();
  EXPECT_EQ(std::memcmp((*view)->data(), (*s)->data(), static_cast<size_t>(bytes)), 0);
  // A wrong chunk count or size is refused.
  EXPECT_TRUE(absl::IsInvalidArgument(
      ParamSegment::MapChunksReadOnly(DupFds(**s), arena->chunk_bytes(), 2 * bytes).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(
      ParamSegment::MapChunksReadOnly(DupFds(**s), 2 * arena->chunk_bytes(), bytes).status()));
  // An unsealed memfd is refused.
  const int plain = memfd_create("plain", MFD_CLOEXEC);
  ASSERT_EQ(ftruncate(plain, 64 * kKiB), 0);
  EXPECT_TRUE(absl::IsInvalidArgument(
      ParamSegment::MapChunksReadOnly({plain}, 64 * kKiB, 64 * kKiB).status()));
}

// Adjacent free chunks are used in place; when only scattered ones are free, a segment still
// gets one contiguous view of them, and its chunks go back when it goes.
TEST(ParamArenaTest, ScatteredFreeChunksStillMakeOneView) {
  auto arena = MakeArena(8 * 64 * kKiB, 64 * kKiB, Pretouch::kAtStart);  // 8 chunks
  std::vector<std::unique_ptr<ParamSegment>> one;
  for (int i = 0; i < 8; ++i) one.push_back(std::move(ParamSegment::Create(arena, 64 * kKiB)).value());
  for (int i = 0; i < 8; i += 2) one[static_cast<size_t>(i)].reset();  // free 0, 2, 4, 6
  auto s = ParamSegment::Create(arena, 4 * 64 * kKiB);
  ASSERT_TRUE(s.ok()) << s.status();
  for (int64_t i = 0; i < 4 * 64 * kKiB; ++i) (*s)->mutable_data()[i] = static_cast<char>(i % 13);
  for (int i = 1; i < 8; i += 2) EXPECT_EQ(one[static_cast<size_t>(i)]->data()[100], 0);
  auto view = ParamSegment::MapChunksReadOnly(DupFds(**s), 64 * kKiB, 4 * 64 * kKiB);
  ASSERT_TRUE(view.ok()) << view.status();
  for (int64_t i = 0; i < 4 * 64 * kKiB; i += 511) {
    ASSERT_EQ((*view)->data()[i], static_cast<char>(i % 13)) << i;
  }
  s->reset();
  one.clear();
  EXPECT_EQ(arena->free_chunks(), 8);
  auto whole = ParamSegment::Create(arena, 8 * 64 * kKiB);  // one run again
  EXPECT_TRUE(whole.ok()) << whole.status();
}

TEST(ParamArenaTest, FileSpansCoverTheSegmentChunkByChunk) {
  auto arena = MakeArena(1 << 20, 64 * kKiB, Pretouch::kNone);
  auto s = ParamSegment::Create(arena, 130 * kKiB);
  ASSERT_TRUE(s.ok());
  const std::vector<int> fds = (*s)->fds();
  ASSERT_EQ(fds.size(), 3u);
  FileSpan a = (*s)->FileAt(10);
  EXPECT_EQ(a.fd, fds[0]);
  EXPECT_EQ(a.offset, 10);
  EXPECT_EQ(a.bytes, 64 * kKiB - 10);
  FileSpan c = (*s)->FileAt(129 * kKiB);
  EXPECT_EQ(c.fd, fds[2]);
  EXPECT_EQ(c.offset, kKiB);
  EXPECT_EQ(c.bytes, kKiB);  // ends with the segment, not the chunk
}

TEST(ParamArenaTest, BadOptionsNameTheField) {
  ParamArenaOptions o;
  absl::Status s = ParamArena::Create(o).status();
  EXPECT_NE(s.message().find("capacity_bytes"), std::string::npos) << s;
  o.capacity_bytes = 1 << 20;
  o.chunk_bytes = 1000;
  s = ParamArena::Create(o).status();
  EXPECT_NE(s.message().find("chunk_bytes"), std::string::npos) << s;
  EXPECT_TRUE(absl::IsInvalidArgument(ParsePretouch("eager", "pretouch").status()));
  EXPECT_EQ(*ParsePretouch("background", "pretouch"), Pretouch::kBackground);
}

TEST(ParamArenaTest, HugePagesFallBackWithANoteWhenNoneAreReserved) {
  ParamArenaOptions o;
  o.capacity_bytes = 8 << 20;
  o.huge_pages = true;
  o.pretouch = Pretouch::kNone;
  auto a = ParamArena::Create(o);
  ASSERT_TRUE(a.ok()) << a.status();
  if ((*a)->huge_pages()) {
    EXPECT_EQ((*a)->chunk_bytes() % (2 << 20), 0);
  } else {
    EXPECT_NE((*a)->huge_pages_note().find("nr_hugepages"), std::string::npos);
  }
  auto s = ParamSegment::Create(*a, 3 << 20);
  ASSERT_TRUE(s.ok()) << s.status();
  std::memset((*s)->mutable_data(), 1, 3 << 20);
}

TEST(ThreadSetTest, FinishedThreadsAreReapedByTheNextStart) {
  ThreadSet set;
  std::atomic<int> ran{0};
  for (int i = 0; i < 50; ++i) {
    set.Start([&] { ++ran; });
    for (int w = 0; w < 1000 && ran.load() <= i; ++w) usleep(100);
  }
  usleep(2000);
  set.Reap();
  EXPECT_LE(set.held(), 1u);  // not one handle per thread ever started
  set.JoinAll();
  EXPECT_EQ(ran.load(), 50);
  EXPECT_EQ(set.held(), 0u);
}

}  // namespace
}  // namespace sluice::runtime
