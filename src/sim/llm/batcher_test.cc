// Batcher: exact iteration times with the fake perf model, TTFT / TBT, KV admission and
// recompute preemption, and a property test that KV never exceeds capacity.
#include "sim/llm/batcher.h"

#include <algorithm>
#include <random>

#include "gtest/gtest.h"
#include "sim/llm/testing/fake_llm.h"

namespace sluice::sim::llm {
namespace {

using testing::FakeLlmPerfModel;

struct Harness {
  explicit Harness(int64_t kv, BatchRole role = BatchRole::kColocated, int max_tokens = 4096,
                   int max_decode = 256)
      : model(kv), batcher(model, seqs, stats, {role, kv, max_tokens, max_decode}) {}
  int Add(int prompt, int output, absl::Time at) {
    Seq s;
    s.prompt = prompt;
    s.output = output;
    s.prefill_target = prompt;
    s.arrival = at;
    seqs.push_back(s);
    batcher.EnqueuePrefill(static_cast<int>(seqs.size()) - 1);
    return static_cast<int>(seqs.size()) - 1;
  }
  // Runs iterations until idle; returns the end time.
  absl::Time RunAll(absl::Time t) {
    while (true) {
      const absl::Duration d = batcher.StartIteration();
      if (d == absl::InfiniteDuration()) return t;
      t += d;
      batcher.FinishIteration(t);
      EXPECT_LE(batcher.kv_used(), batcher.kv_capacity());
    }
  }
  FakeLlmPerfModel model;
  std::vector<Seq> seqs;
  FunctionStats stats;
  Batcher batcher;
};

const absl::Time kT0 = absl::UnixEpoch();

TEST(BatcherTest, OneRequestTtftIsPrefillTimeAndTbtIsDecodeStep) {
  Harness h(1000);
  const int s = h.Add(100, 3, kT0);
  const absl::Time end = h.RunAll(kT0);
  // Prefill 10 ms + 100 x 10 us = 11 ms; two decode steps of 5 ms + 1 x 0.1 ms.
  EXPECT_EQ(h.seqs[s].first_token - kT0, absl::Milliseconds(11));
  EXPECT_EQ(end - kT0, absl::Milliseconds(11) + 2 * absl::Microseconds(5100));
  EXPECT_EQ(h.seqs[s].state, SeqState::kDone);
  EXPECT_EQ(h.stats.tbt.count(), 2);
  EXPECT_NEAR(h.stats.tbt.Percentile(0.5), 5.1, 1e-4);
  EXPECT_NEAR(h.stats.ttft.Percentile(0.99), 11.0, 1e-4);
  EXPECT_EQ(h.batcher.kv_used(), 0);
}

TEST(BatcherTest, ChunkedPrefillSpansIterations) {
  Harness h(10000, BatchRole::kColocated, /*max_tokens=*/500);
  const int s = h.Add(1200, 1, kT0);
  h.RunAll(kT0);
  // Chunks 500, 500, 200: 15 + 15 + 12 ms.
  EXPECT_EQ(h.seqs[s].first_token - kT0, absl::Milliseconds(42));
}

TEST(BatcherTest, AdmissionWaitsForKv) {
  Harness h(250);
  const int a = h.Add(200, 2, kT0);
  const int b = h.Add(100, 1, kT0);  // 200 + 100 > 250: waits until a frees its KV
  h.RunAll(kT0);
  EXPECT_LT(h.seqs[a].done, h.seqs[b].first_token);
  EXPECT_EQ(h.stats.preemptions, 0);
}

TEST(BatcherTest, DecodeGrowthPreemptsNewestAndRecomputes) {
  // Two sequences of 40 prompt tokens and 30 output tokens: together they grow past 100 KV.
  Harness h(100);
  const int a = h.Add(40, 30, kT0);
  const int b = h.Add(40, 30, kT0);
  h.RunAll(kT0);
  EXPECT_GE(h.stats.preemptions, 1);
  EXPECT_EQ(h.seqs[a].state, SeqState::kDone);
  EXPECT_EQ(h.seqs[b].state, SeqState::kDone);
  EXPECT_LT(h.seqs[a].done, h.seqs[b].done);  // the newest (b) was the victim
  EXPECT_EQ(h.batcher.kv_used(), 0);
  // Every token after the first is one gap: 29 per sequence.
  EXPECT_EQ(h.stats.tbt.count(), 58);
}

TEST(BatcherTest, PrefillRoleHandsOffAfterFirstToken) {
  Harness h(1000, BatchRole::kPrefill);
  const int s = h.Add(100, 5, kT0);
  ASSERT_EQ(h.batcher.StartIteration(), absl::Milliseconds(11));
  h.batcher.FinishIteration(kT0 + absl::Milliseconds(11));
  ASSERT_EQ(h.batcher.prefilled().size(), 1u);
  EXPECT_EQ(h.seqs[s].state, SeqState::kTransferring);
  EXPECT_EQ(h.batcher.kv_used(), 100);  // held until the transfer lands
  h.batcher.ReleaseKv(s);
  EXPECT_EQ(h.batcher.kv_used(), 0);
}

TEST(BatcherTest, TakeUnstartedLeavesStartedWork) {
  Harness h(1000, BatchRole::kColocated, /*max_tokens=*/100);
  h.Add(300, 2, kT0);
  const int b = h.Add(50, 2, kT0);
  ASSERT_NE(h.batcher.StartIteration(), absl::InfiniteDuration());
  const std::vector<int> taken = h.batcher.TakeUnstarted();
  ASSERT_EQ(taken.size(), 1u);
  EXPECT_EQ(taken[0], b);
  EXPECT_EQ(h.batcher.queued_prefill_tokens(), 300);
}

// Property: random prompts/outputs, KV never over capacity, every sequence finishes.
// A dead instance gives back every sequence it holds, reset for recompute, mid-iteration too.
TEST(BatcherTest, AbortReturnsEverySequenceForRecompute) {
  Harness h(1000, BatchRole::kColocated, 100);
  const int a = h.Add(50, 10, kT0);
  absl::Time t = kT0;
  for (int i = 0; i < 3; ++i) {  // a prefills, then decodes two tokens
    t += h.batcher.StartIteration();
    h.batcher.FinishIteration(t);
  }
  ASSERT_EQ(h.seqs[a].state, SeqState::kRunning);
  const int b = h.Add(150, 5, t);  // its chunks span two iterations
  const int c = h.Add(900, 5, t);  // waits for KV
  ASSERT_NE(h.batcher.StartIteration(), absl::InfiniteDuration());  // in flight when it dies
  const std::vector<int> back = h.batcher.Abort();
  EXPECT_EQ(back.size(), 3u);
  for (const int seq : {a, b, c}) {
    EXPECT_NE(std::find(back.begin(), back.end(), seq), back.end()) << seq;
    EXPECT_EQ(h.seqs[seq].state, SeqState::kQueued);
    EXPECT_EQ(h.seqs[seq].kv, 0);
    EXPECT_EQ(h.seqs[seq].prefilled, 0);
  }
  EXPECT_EQ(h.seqs[a].tokens, 3);  // the prefill's token and two decode steps
  EXPECT_EQ(h.seqs[a].prefill_target, 53);
  EXPECT_EQ(h.seqs[b].prefill_target, 150);
  EXPECT_TRUE(h.batcher.idle());
  EXPECT_FALSE(h.batcher.busy());
  EXPECT_EQ(h.batcher.kv_used(), 0);
  EXPECT_EQ(h.batcher.queued_prefill_tokens(), 0);
}

TEST(BatcherPropertyTest, KvNeverOverCapacityAndAllFinish) {
  for (uint32_t seed = 1; seed <= 30; ++seed) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> prompt(1, 300), output(1, 60);
    Harness h(500, BatchRole::kColocated, 256, 16);
    absl::Time t = kT0;
    for (int i = 0; i < 40; ++i) {
      const int p = prompt(rng);
      const int o = std::min(output(rng), 500 - p);
      h.Add(p, o, t);
    }
    h.RunAll(t);
    for (const Seq& s : h.seqs) {
      ASSERT_EQ(s.state, SeqState::kDone) << "seed " << seed;
    }
    EXPECT_EQ(h.batcher.kv_used(), 0) << "seed " << seed;
  }
}

}  // namespace
}  // namespace sluice::sim::llm
