// PrefetchedSource / ArrivalPrefetcher (prefetch.h): wrapped sources yield exactly what twins of
// them built with the same seeds yield, in order, for Next() and grid counts, with the helper
// thread running (many sources consumed in a random interleaving, past the rings' capacity), and
// after it stopped; rings sized to a busy source's rate; off-grid and wrong-use calls are refused.
#include "sim/workload/prefetch.h"

#include <memory>
#include <optional>
#include <random>
#include <vector>

#include "gtest/gtest.h"

#include "sim/workload/sources.h"

namespace sluice::sim {
namespace {

const absl::Time kStart = absl::UnixEpoch();
const ReplayWindow kWindow{kStart, 0, absl::Hours(2)};

std::unique_ptr<ArrivalSource> Source(uint64_t seed, double rate_rps = -1) {
  LongTailArrivals p;
  p.rate_rps = rate_rps > 0 ? rate_rps : 0.5 + static_cast<double>(seed % 7);
  p.cv = 1.0 + static_cast<double>(seed % 3);
  p.diurnal_amplitude = 0.4;
  return MakeLongTailSource(p, seed, kWindow);
}

struct Pair {
  std::unique_ptr<PrefetchedSource> wrapped;
  std::unique_ptr<ArrivalSource> twin;
  bool counts = false;
  absl::Time from = kStart;
};

// Consumes `pairs` in a random interleaving until each is done (counts: the grid's windows;
// Next(): exhaustion) and expects every value to equal the twin's.
void ConsumeAndCompare(std::vector<Pair>& pairs, const absl::Duration step, uint32_t seed) {
  const absl::Time end = kStart + absl::Hours(2);
  std::mt19937 rng(seed);
  std::vector<size_t> live(pairs.size());
  for (size_t i = 0; i < live.size(); ++i)
    live[i] = i;
  while (!live.empty()) {
    const size_t k = rng() % live.size();
    Pair& p = pairs[live[k]];
    bool done = false;
    if (p.counts) {
      const absl::Time to = std::min(p.from + step, end);
      ASSERT_EQ(p.wrapped->DrawCount(p.from, to), p.twin->DrawCount(p.from, to));
      p.from = to;
      done = p.from >= end;
    } else {
      const std::optional<Arrival> a = p.wrapped->Next();
      const std::optional<Arrival> b = p.twin->Next();
      ASSERT_EQ(a.has_value(), b.has_value());
      if (a) {
        ASSERT_EQ(a->at, b->at);
      }
      done = !a.has_value();
    }
    if (done) {
      live[k] = live.back();
      live.pop_back();
    }
  }
}

std::vector<Pair> MakePairs(int n, absl::Duration step) {
  std::vector<Pair> pairs;
  for (int i = 0; i < n; ++i) {
    Pair p;
    p.counts = i % 2 == 0;
    p.twin = Source(static_cast<uint64_t>(i) + 1);
    p.wrapped = p.counts ? std::make_unique<PrefetchedSource>(Source(static_cast<uint64_t>(i) + 1),
                                                              kStart, step, kStart + absl::Hours(2))
                         : std::make_unique<PrefetchedSource>(Source(static_cast<uint64_t>(i) + 1));
    pairs.push_back(std::move(p));
  }
  return pairs;
}

TEST(PrefetchTest, TheHelperThreadYieldsWhatTheSourcesWould) {
  const absl::Duration step = absl::Seconds(1);
  std::vector<Pair> pairs = MakePairs(24, step);
  ArrivalPrefetcher prefetcher;
  for (Pair& p : pairs)
    prefetcher.Add(p.wrapped.get());
  prefetcher.Start();
  ConsumeAndCompare(pairs, step, 3);
  prefetcher.Stop();
  prefetcher.Stop();  // idempotent
}

// A busy source's ring holds about 32 seconds of its arrivals (128 to 16,384 items), and yields
// the same sequence past it.
TEST(PrefetchTest, BusySourcesGetRingsSizedToTheirRate) {
  EXPECT_EQ(PrefetchedSource(Source(1, 0.5)).capacity(), 128u);
  EXPECT_EQ(PrefetchedSource(Source(1, 1e6)).capacity(), 16384u);
  EXPECT_EQ(PrefetchedSource(Source(1, 1), kStart, absl::Seconds(1), kStart).capacity(), 128u);
  std::vector<Pair> pairs(2);
  for (Pair& p : pairs) {
    p.twin = Source(9, 100);
    p.wrapped = std::make_unique<PrefetchedSource>(Source(9, 100));
  }
  EXPECT_EQ(pairs[0].wrapped->capacity(), 4096u);  // 3,200 rounded up to a power of two
  ArrivalPrefetcher prefetcher;
  prefetcher.Add(pairs[0].wrapped.get());
  prefetcher.Start();
  ConsumeAndCompare(pairs, absl::Seconds(1), 11);  // pairs[1] fills its own ring
}

TEST(PrefetchTest, WithoutOrAfterTheHelperTheConsumerFillsItsOwnRing) {
  const absl::Duration step = absl::Milliseconds(1500);
  std::vector<Pair> pairs = MakePairs(6, step);
  ConsumeAndCompare(pairs, step, 5);  // no prefetcher at all
  std::vector<Pair> more = MakePairs(6, step);
  {
    ArrivalPrefetcher prefetcher;
    for (Pair& p : more)
      prefetcher.Add(p.wrapped.get());
    prefetcher.Start();
  }  // stopped before anything was taken: the rest is filled on demand
  ConsumeAndCompare(more, step, 7);
}

TEST(PrefetchDeathTest, OffGridAndWrongUseAreRefused) {
  PrefetchedSource counts(Source(1), kStart, absl::Seconds(1), kStart + absl::Seconds(10));
  EXPECT_DEATH(counts.DrawCount(kStart + absl::Seconds(1), kStart + absl::Seconds(2)), "grid");
  EXPECT_DEATH(counts.Next(), "counts");
  PrefetchedSource next(Source(2));
  EXPECT_DEATH(next.DrawCount(kStart, kStart + absl::Seconds(1)), "Next");
  for (int i = 0; i < 10; ++i)
    counts.DrawCount(kStart + absl::Seconds(i), kStart + absl::Seconds(i + 1));
  EXPECT_DEATH(counts.DrawCount(kStart + absl::Seconds(10), kStart + absl::Seconds(11)), "grid");
}

}  // namespace
}  // namespace sluice::sim
