// Profiler against Dilu's measured <IBS, SMR> -> latency tables (dilu-artifacts/profiles_bs_sm,
// no licence: read from the shared data folder, skipped when absent). Records the Hybrid Growth
// Search's trial counts per model at a 100 ms SLO (paper §3.2: "<100ms inference SLO"; Table 2
// reports 6-9 trials for its four models) and compares its optimum with the 60-trial traversal.
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "gtest/gtest.h"

#include "core/dilu/profiler.h"

namespace sluice::core {
namespace {

std::string DataDir() {
  if (const char* d = std::getenv("SLUICE_DATA_DIR"))
    return d;
  const char* src = std::getenv("SLUICE_SOURCE_DIR");
  return std::string(src ? src : ".") + "/../shared/data";
}

// Rows "batch,sm_percent,latency_s,throughput" (no header).
class TableRunner : public TrialRunner {
 public:
  bool Load(const std::string& path) {
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
      std::stringstream ss(line);
      double b, sm, lat, thr;
      char c;
      if (ss >> b >> c >> sm >> c >> lat >> c >> thr) {
        table_[{static_cast<int>(b), static_cast<int>(sm + 0.5)}] = lat;
      }
    }
    return table_.size() == 60;
  }
  absl::StatusOr<TrialResult> Run(const Trial& t) override {
    auto it = table_.find({t.batch, static_cast<int>(t.sm_share * 100 + 0.5)});
    if (it == table_.end())
      return absl::NotFoundError("no such trial in the table");
    return TrialResult{absl::Seconds(it->second), t.batch / it->second, Bytes()};
  }

 private:
  std::map<std::pair<int, int>, double> table_;
};

struct Expect {
  const char* model;
  int trials;
  int batch;
  int sm_percent;
};

TEST(ProfilerDataTest, HybridGrowthSearchOnDilusMeasuredTables) {
  // Golden values of this implementation (te_tolerance 5 %); the traversal optimum is equal for
  // every model but gpt2_large, where HGS stops at <1, 10 %> (TE 262/s) and the traversal finds
  // <4, 30 %> (268/s, 2 % better) across a noisy dip.
  const Expect expected[] = {{"bert_base", 5, 4, 10},
                             {"gpt2_large", 3, 1, 10},
                             {"llama2", 12, 32, 70},
                             {"resnet152", 10, 32, 50},
                             {"roberta_large", 7, 4, 30}};
  const Profiler profiler = *Profiler::Create({});
  for (const Expect& e : expected) {
    TableRunner table;
    const std::string path = DataDir() + "/dilu-artifacts/profiles_bs_sm/bs_sm_" + e.model + ".csv";
    if (!table.Load(path))
      GTEST_SKIP() << "Dilu profiles not available at " << path;
    auto hgs = profiler.ProfileInference(table, absl::Milliseconds(100));
    auto trav = profiler.TraverseInference(table, absl::Milliseconds(100));
    ASSERT_TRUE(hgs.ok() && trav.ok()) << e.model;
    EXPECT_EQ(hgs->trials, e.trials) << e.model;
    EXPECT_EQ(hgs->batch, e.batch) << e.model;
    EXPECT_NEAR(hgs->quota.request * 100, e.sm_percent, 1e-9) << e.model;
    EXPECT_EQ(trav->trials, 60) << e.model;
    const bool same = trav->batch == hgs->batch && trav->quota == hgs->quota;
    EXPECT_EQ(same, std::string(e.model) != "gpt2_large") << e.model;
    std::printf("%-14s HGS %2d trials -> IBS %2d, SMR %.2f | traversal 60 -> IBS %2d, SMR %.2f\n",
                e.model, hgs->trials, hgs->batch, hgs->quota.request, trav->batch,
                trav->quota.request);
  }
}

}  // namespace
}  // namespace sluice::core
