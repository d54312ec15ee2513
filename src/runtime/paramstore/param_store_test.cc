// ParamStore: capacity and the eviction threshold, LRU order, pins, the fill protocol (nothing
// half-written served), bad input, concurrent readers, and sealed read-only segments.
#include "runtime/paramstore/param_store.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <random>
#include <thread>

#include "gtest/gtest.h"
#include "runtime/paramstore/checksum.h"

namespace sluice::runtime {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

// A store of `capacity` bytes at the 85 % threshold with a clock the test advances.
struct Fixture {
  absl::Time now = absl::FromUnixSeconds(1000);
  std::unique_ptr<ParamStore> store;
  explicit Fixture(int64_t capacity, double threshold = 0.85) {
    ParamStoreOptions o;
    o.capacity_bytes = capacity;
    o.evict_threshold = threshold;
    o.now = [this] { return now; };
    store = std::move(ParamStore::Create(o)).value();
  }
  // Stores `model` of `bytes` filled with `fill`.
  absl::Status Put(const std::string& model, int64_t bytes, char fill = 'x') {
    absl::StatusOr<std::unique_ptr<ParamWriter>> w = store->BeginPut(model, bytes);
    if (!w.ok()) return w.status();
    std::memset((*w)->data(), fill, static_cast<size_t>(bytes));
    now += absl::Seconds(1);
    return (*w)->Commit();
  }
};

// A model's chunk checksums are computed once (a chain source sending it again does not re-read
// it), and a filled model keeps the ones its writer verified (a chain member's, on arrival).
TEST(ParamStoreTest, ChunkChecksumsAreComputedOnceAndKept) {
  Fixture f(16 * kMiB);
  const int64_t piece = 64 * 1024, bytes = 3 * piece + 5;
  ASSERT_TRUE(f.Put("m", bytes, 'c').ok());
  auto lease = f.store->Acquire("m");
  ASSERT_TRUE(lease.ok());
  for (int64_t i = 0; i < 4; ++i) {
    const int64_t len = std::min(piece, bytes - i * piece);
    const uint64_t want = FrameChecksum((*lease)->data() + i * piece, static_cast<size_t>(len));
    EXPECT_EQ((*lease)->ChunkChecksum(piece, i), want) << i;
    EXPECT_EQ((*lease)->ChunkChecksum(piece, i), want) << i;  // the kept one
  }
  auto w = f.store->BeginPut("k", bytes);
  ASSERT_TRUE(w.ok());
  std::memset((*w)->data(), 'k', static_cast<size_t>(bytes));
  (*w)->KeepChunkChecksums(piece, {11, 12, 13, 14});
  ASSERT_TRUE((*w)->Commit().ok());
  auto k = f.store->Acquire("k");
  ASSERT_TRUE(k.ok());
  EXPECT_EQ((*k)->ChunkChecksum(piece, 2), 13u);  // kept, not recomputed
  EXPECT_NE((*k)->ChunkChecksum(2 * piece, 0), 11u);  // another chunk size: computed
}

TEST(ParamStoreTest, CreateRejectsBadOptions) {
  ParamStoreOptions o;
  EXPECT_TRUE(absl::IsInvalidArgument(ParamStore::Create(o).status()));
  o.capacity_bytes = kMiB;
  o.evict_threshold = 1.5;
  absl::Status s = ParamStore::Create(o).status();
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_NE(s.message().find("evict_threshold"), std::string::npos);
}

TEST(ParamStoreTest, StoresAndServesReadOnlySealedSegments) {
  Fixture f(16 * kMiB);
  ASSERT_TRUE(f.Put("llama", 2 * kMiB, 'a').ok());
  auto lease = f.store->Acquire("llama");
  ASSERT_TRUE(lease.ok());
  EXPECT_EQ((*lease)->size(), 2 * kMiB);
  EXPECT_EQ((*lease)->data()[2 * kMiB - 1], 'a');
  // The kernel refuses a writable shared mapping, and write(2), of every sealed chunk.
  for (int fd : (*lease)->fds()) {
    void* p = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    EXPECT_EQ(p, MAP_FAILED);
    EXPECT_NE(fcntl(fd, F_GET_SEALS) & (F_SEAL_WRITE | 0x0010), 0);
    EXPECT_EQ(pwrite(fd, "x", 1, 0), -1);
  }
  auto infos = f.store->List();
  ASSERT_EQ(infos.size(), 1u);
  EXPECT_EQ(infos[0].pins, 1);
  EXPECT_TRUE(infos[0].ready);
}

TEST(ParamStoreTest, FillingModelIsNeverServedAndAbortFreesIt) {
  Fixture f(16 * kMiB);
  auto w = f.store->BeginPut("half", 4 * kMiB);
  ASSERT_TRUE(w.ok());
  EXPECT_TRUE(absl::IsUnavailable(f.store->Acquire("half").status()));
  EXPECT_FALSE(f.store->Has("half"));
  EXPECT_EQ(f.store->used_bytes(), 4 * kMiB);  // reserved while filling
  EXPECT_TRUE(absl::IsAlreadyExists(f.store->BeginPut("half", kMiB).status()));
  w->reset();  // dropped without Commit
  EXPECT_TRUE(absl::IsNotFound(f.store->Acquire("half").status()));
  EXPECT_EQ(f.store->used_bytes(), 0);
}

TEST(ParamStoreTest, EvictsLeastRecentlyUsedPastThreshold) {
  Fixture f(10 * kMiB);  // limit 8.5 MiB
  ASSERT_TRUE(f.Put("a", 3 * kMiB).ok());
  ASSERT_TRUE(f.Put("b", 3 * kMiB).ok());
  { auto use = f.store->Acquire("a"); ASSERT_TRUE(use.ok()); }  // a is now more recent than b
  ASSERT_TRUE(f.Put("c", 3 * kMiB).ok());  // 9 MiB > 8.5: evict b (LRU)
  EXPECT_TRUE(f.store->Has("a"));
  EXPECT_FALSE(f.store->Has("b"));
  EXPECT_TRUE(f.store->Has("c"));
  EXPECT_LE(f.store->used_bytes(), f.store->limit_bytes());
}

TEST(ParamStoreTest, PinnedModelsAreNeverEvicted) {
  Fixture f(10 * kMiB);
  ASSERT_TRUE(f.Put("a", 4 * kMiB).ok());
  ASSERT_TRUE(f.Put("b", 4 * kMiB).ok());
  auto pin_a = f.store->Acquire("a");
  auto pin_b = f.store->Acquire("b");
  ASSERT_TRUE(pin_a.ok() && pin_b.ok());
  absl::Status s = f.store->BeginPut("c", 2 * kMiB).status();
  EXPECT_TRUE(absl::IsResourceExhausted(s)) << s;
  EXPECT_NE(s.message().find("nothing was evicted"), std::string::npos);
  EXPECT_TRUE(f.store->Has("a") && f.store->Has("b"));
  EXPECT_TRUE(absl::IsFailedPrecondition(f.store->Evict("a")));
  pin_b->reset();
  ASSERT_TRUE(f.Put("c", 2 * kMiB).ok());  // evicts b, keeps pinned a
  EXPECT_TRUE(f.store->Has("a"));
  EXPECT_FALSE(f.store->Has("b"));
}

TEST(ParamStoreTest, TooLargeForCapacityEvictsNothing) {
  Fixture f(10 * kMiB);
  ASSERT_TRUE(f.Put("a", 2 * kMiB).ok());
  absl::Status s = f.store->BeginPut("huge", 9 * kMiB).status();  // > 8.5 MiB limit
  EXPECT_TRUE(absl::IsResourceExhausted(s)) << s;
  EXPECT_NE(s.message().find("huge"), std::string::npos);
  EXPECT_TRUE(f.store->Has("a"));
}

TEST(ParamStoreTest, BadInputNamesTheProblem) {
  Fixture f(10 * kMiB);
  EXPECT_TRUE(absl::IsInvalidArgument(f.store->BeginPut("", kMiB).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(f.store->BeginPut("a/b", kMiB).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(f.store->BeginPut("a", 0).status()));
  absl::Status s = f.store->BeginPut("a", kMiB, {kMiB / 2, kMiB / 4}).status();
  EXPECT_NE(s.message().find("layer_bytes"), std::string::npos);
  EXPECT_TRUE(absl::IsNotFound(f.store->Acquire("unknown").status()));
  EXPECT_TRUE(absl::IsNotFound(f.store->Evict("unknown")));
}

TEST(ParamStoreTest, LayersAreReported) {
  Fixture f(10 * kMiB);
  auto w = f.store->BeginPut("m", 3 * kMiB, {kMiB, 2 * kMiB});
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->Commit().ok());
  auto l = f.store->Acquire("m");
  ASSERT_TRUE(l.ok());
  EXPECT_EQ((*l)->layer_bytes(), (std::vector<int64_t>{kMiB, 2 * kMiB}));
}

TEST(ParamStoreTest, LastUseFollowsAcquire) {
  Fixture f(10 * kMiB);
  ASSERT_TRUE(f.Put("m", kMiB).ok());
  f.now += absl::Minutes(3);
  { auto l = f.store->Acquire("m"); }
  EXPECT_EQ(f.store->List()[0].last_use, f.now);
  EXPECT_EQ(f.store->List()[0].pins, 0);
}

// Many threads acquire, read and release while another keeps filling and evicting: every read
// sees a complete segment (its checksum), usage never passes the limit.
TEST(ParamStoreTest, ConcurrentReadersSeeOnlyCompleteSegments) {
  Fixture f(64 * kMiB, 0.5);
  const int64_t size = 4 * kMiB;
  std::atomic<bool> stop{false};
  std::atomic<int> reads{0}, bad{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 4; ++r) {
    readers.emplace_back([&, r] {
      std::mt19937 rng(static_cast<unsigned>(r));
      while (!stop) {
        auto l = f.store->Acquire("m" + std::to_string(rng() % 12));
        if (!l.ok()) continue;
        const char first = (*l)->data()[0];
        for (int64_t i = 0; i < size; i += 4096) {
          if ((*l)->data()[i] != first) ++bad;
        }
        ++reads;
      }
    });
  }
  for (int round = 0; round < 40; ++round) {
    const std::string m = "m" + std::to_string(round % 12);
    (void)f.store->Evict(m);
    (void)f.Put(m, size, static_cast<char>('a' + round % 20));
    EXPECT_LE(f.store->used_bytes(), f.store->limit_bytes());
  }
  stop = true;
  for (auto& t : readers) t.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GT(reads.load(), 0);
}

TEST(ChecksumTest, DetectsChangesAndLength) {
  std::string a(10000, 'q');
  const uint64_t h = Checksum64(a.data(), a.size());
  EXPECT_EQ(h, Checksum64(a.data(), a.size()));
  a[5000] = 'r';
  EXPECT_NE(h, Checksum64(a.data(), a.size()));
  std::string z1(64, '\0'), z2(72, '\0');
  EXPECT_NE(Checksum64(z1.data(), z1.size()), Checksum64(z2.data(), z2.size()));
}

// The chain's frame check: the hardware path (when this CPU has SSE4.2) and the table-driven one
// agree at every size around the lane split; a bit flip anywhere (each quarter, the tail), two
// swapped quarters and a longer run of zeros all change it.
TEST(ChecksumTest, FrameChecksumAgreesWithPortableAndDetectsChanges) {
  std::string d(4 * 1024 * 1024 + 77, '\0');
  for (size_t i = 0; i < d.size(); ++i) d[i] = static_cast<char>((i * 2654435761u) >> 13);
  for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{31}, size_t{32}, size_t{33},
                   size_t{100}, size_t{4096}, d.size()}) {
    EXPECT_EQ(FrameChecksum(d.data(), n), FrameChecksumPortable(d.data(), n)) << n;
  }
  const uint64_t h = FrameChecksum(d.data(), d.size());
  for (size_t at : {size_t{0}, d.size() / 4 + 3, d.size() / 2 + 5, d.size() * 3 / 4 + 7,
                    d.size() - 1}) {
    d[at] ^= 1;
    EXPECT_NE(FrameChecksum(d.data(), d.size()), h) << at;
    d[at] ^= 1;
  }
  std::string s = d.substr(0, 4096);
  const uint64_t hs = FrameChecksum(s.data(), s.size());
  std::swap_ranges(s.begin(), s.begin() + 1024, s.begin() + 1024);
  EXPECT_NE(FrameChecksum(s.data(), s.size()), hs);
  std::string z1(64, '\0'), z2(72, '\0');
  EXPECT_NE(FrameChecksum(z1.data(), z1.size()), FrameChecksum(z2.data(), z2.size()));
}

}  // namespace
}  // namespace sluice::runtime
