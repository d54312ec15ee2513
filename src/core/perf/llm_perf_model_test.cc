// Tests of the built-in token-level LLM model: contract properties (zero, monotonicity, layer
// split), anchors against published figures and Vidur's tables, KV sizes and capacity, errors.
#include "core/perf/llm_perf_model.h"

#include <memory>
#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "core/perf/llm_analytic_model.h"

namespace sluice::core {
namespace {

using ::testing::HasSubstr;

double Ms(absl::Duration d) {
  return absl::ToDoubleMilliseconds(d);
}

std::unique_ptr<LlmPerfModel> Model(const std::string& name, const std::string& gpu = "a100",
                                    int tp = 0) {
  auto m = BuiltinLlmModel(name, gpu, tp);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? *std::move(m) : nullptr;
}

TEST(LlmPerfModelTest, AllZeroIsZero) {
  for (const std::string& name : BuiltinLlmModelNames())
    EXPECT_EQ(Model(name)->IterationTime(0, 0, 0, 0), absl::ZeroDuration()) << name;
}

// Property: for every model, GPU and fitting tp, growing prefill tokens, decode sequences or
// decode context never shortens the iteration, from many random starting points.
TEST(LlmPerfModelTest, MonotoneInTokensSequencesAndContext) {
  std::mt19937_64 rng(20261125);
  for (const std::string& name : BuiltinLlmModelNames()) {
    for (const std::string gpu : {"a100", "h100"}) {
      for (int tp : {1, 2, 4, 8}) {
        auto m = BuiltinLlmModel(name, gpu, tp);
        if (!m.ok())
          continue;  // does not fit
        for (int i = 0; i < 300; ++i) {
          int64_t pt = rng() % 8192, ctx = rng() % 200000;
          int ps = pt > 0 ? 1 + static_cast<int>(rng() % 8) : 0, ds = rng() % 256;
          int64_t step = 1 + rng() % 512;
          absl::Duration base = (*m)->IterationTime(pt, ps, ds, ctx);
          SCOPED_TRACE(absl::StrCat(name, " ", gpu, " tp", tp, " case ", i));
          EXPECT_GE((*m)->IterationTime(pt + step, std::max(ps, 1), ds, ctx), base);
          EXPECT_GE((*m)->IterationTime(pt, ps, ds + static_cast<int>(step), ctx), base);
          EXPECT_GE((*m)->IterationTime(pt, ps, ds, ctx + step), base);
          // A new sequence arriving with the current mean prompt length.
          if (ps > 0) {
            EXPECT_GE((*m)->IterationTime(pt + (pt + ps - 1) / ps, ps + 1, ds, ctx), base);
          }
        }
      }
    }
  }
}

TEST(LlmPerfModelTest, LayersSplitTheIterationEvenly) {
  auto m = Model("llama2-70b");
  EXPECT_NEAR(Ms(m->LayerTime(1000, 2, 16, 8000)) * 80, Ms(m->IterationTime(1000, 2, 16, 8000)),
              1e-3);  // LayerTime rounds to whole nanoseconds
}

// vLLM serves llama2-7b on one A100 at ~75-80 tokens/s at batch 1 (12-16 ms per step).
TEST(LlmPerfModelTest, Llama2_7bA100DecodeAtBatchOneAnchor) {
  double ms = Ms(Model("llama2-7b")->DecodeTime(1, 512));
  EXPECT_GE(ms, 12.0);
  EXPECT_LE(ms, 16.0);
}

// A 2k-token prompt: Vidur's linear ops alone give 32 x 4.17 ms = 133 ms; attention, the LM head
// and the overhead add ~10 %. Stated tolerance: 130-250 ms.
TEST(LlmPerfModelTest, Llama2_7bA100PrefillAnchor) {
  auto m = Model("llama2-7b");
  double ms = Ms(m->PrefillTime(2048, 1));
  EXPECT_GE(ms, 130.0);
  EXPECT_LE(ms, 250.0);
  // The token-linear part reproduces Vidur's 2048-token row (4.169 ms per layer) within 5 %.
  const auto& a = dynamic_cast<const AnalyticLlmModel&>(*m);
  EXPECT_NEAR(a.Terms(2048, 1, 0, 0).linear_s, 32 * 4.169e-3, 0.05 * 32 * 4.169e-3);
}

// llama2-70b on 4 A100s: Vidur's linear ops are ~0.16 ms/token at 2k tokens (80 x 4.13 / 2048),
// plus 160 all-reduces of 32 MiB. Stated tolerance: 0.15-0.25 ms per prompt token.
TEST(LlmPerfModelTest, Llama2_70bTp4PrefillPerTokenAnchor) {
  auto m = Model("llama2-70b");
  EXPECT_EQ(m->spec().tp, 4);
  double per_token = Ms(m->PrefillTime(2048, 1)) / 2048;
  EXPECT_GE(per_token, 0.15);
  EXPECT_LE(per_token, 0.25);
  // And it fits BlitzScale's 1250 ms TTFT SLO for a 2k prompt with room to queue.
  EXPECT_LT(Ms(m->PrefillTime(2048, 1)), 625.0);
}

TEST(LlmPerfModelTest, KvBytesPerTokenFollowGqa) {
  EXPECT_EQ(Model("llama2-7b")->spec().kv_bytes_per_token, common::Bytes::KiB(512));
  EXPECT_EQ(Model("llama2-70b")->spec().kv_bytes_per_token, common::Bytes::KiB(320));
  EXPECT_EQ(Model("llama3-8b")->spec().kv_bytes_per_token, common::Bytes::KiB(128));
}

// 80 GB A100 at 0.9 utilisation = 72 GiB; minus 12.55 GiB of weights and 1 GiB of activations
// leaves ~58.4 GiB = ~119.7k tokens of 512 KiB (vLLM reports ~7,000 16-token blocks: 112k).
TEST(LlmPerfModelTest, Llama2_7bKvCapacityOn80GbGpu) {
  const LlmModelSpec& s = Model("llama2-7b")->spec();
  EXPECT_EQ(s.KvCapacityTokens(),
            (common::Bytes::GiB(71).count() - s.param_bytes.count()) / (512 * 1024));
  EXPECT_GT(s.KvCapacityTokens(), 100000);
  EXPECT_LT(s.KvCapacityTokens(), 130000);
  // GQA: llama3-8b holds ~4x as many tokens in less free memory.
  EXPECT_GT(Model("llama3-8b")->spec().KvCapacityTokens(), 3 * s.KvCapacityTokens());
}

TEST(LlmPerfModelTest, KvCapacityIsZeroWhenWeightsDoNotFit) {
  LlmModelSpec s = Model("llama2-7b")->spec();
  s.param_bytes = common::Bytes::GiB(100);
  EXPECT_EQ(s.KvCapacityTokens(), 0);
}

TEST(LlmPerfModelTest, H100IsFasterAndA800IsTimedAsA100) {
  for (const std::string& name : BuiltinLlmModelNames()) {
    auto a = Model(name, "a100"), h = Model(name, "h100"), a800 = Model(name, "A800");
    EXPECT_LT(h->PrefillTime(2048, 1), a->PrefillTime(2048, 1)) << name;
    EXPECT_LT(h->DecodeTime(32, 32000), a->DecodeTime(32, 32000)) << name;
    EXPECT_EQ(a800->DecodeTime(8, 4000), a->DecodeTime(8, 4000)) << name;
    EXPECT_EQ(a800->spec().gpu, "a100");
  }
}

TEST(LlmPerfModelTest, BatchingAmortisesDecode) {
  auto m = Model("llama2-7b");
  absl::Duration one = m->DecodeTime(1, 1000), many = m->DecodeTime(64, 64000);
  EXPECT_GT(many, one);
  EXPECT_LT(many / 64, one / 4);
  EXPECT_GT(m->DecodeTime(8, 64000), m->DecodeTime(8, 8000));  // long contexts cost HBM reads
}

TEST(LlmPerfModelTest, MoreTensorParallelismPrefillsFaster) {
  EXPECT_LT(Model("llama2-7b", "a100", 2)->PrefillTime(4096, 1),
            Model("llama2-7b", "a100", 1)->PrefillTime(4096, 1));
  EXPECT_LT(Model("llama2-70b", "a100", 8)->PrefillTime(4096, 1),
            Model("llama2-70b", "a100", 4)->PrefillTime(4096, 1));
}

TEST(LlmPerfModelTest, UnknownModelNamesTheKnownOnes) {
  auto m = BuiltinLlmModel("gpt-5");
  ASSERT_EQ(m.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(m.status().message(), HasSubstr("llama2-7b, llama2-70b, llama3-8b"));
  auto g = BuiltinLlmModel("llama2-7b", "v100");
  ASSERT_EQ(g.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(g.status().message(), HasSubstr("gpu"));
}

TEST(LlmPerfModelTest, TpErrorsNameTheField) {
  auto odd = BuiltinLlmModel("llama2-7b", "a100", 3);
  ASSERT_EQ(odd.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(odd.status().message(), HasSubstr("tp"));
  auto too_small = BuiltinLlmModel("llama2-70b", "a100", 1);
  ASSERT_EQ(too_small.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(too_small.status().message(), HasSubstr("does not fit"));
  EXPECT_TRUE(BuiltinLlmModel("llama2-70b", "a100", 2).ok());
}

}  // namespace
}  // namespace sluice::core
