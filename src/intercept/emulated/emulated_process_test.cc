// Cross-process tests of the emulated device model: processes contend for one device timeline
// (together they never exceed its capacity, and neither starves), and device memory is one
// capacity across processes, with a killed process's charge reclaimed.
#include <signal.h>

#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "intercept/emulated/emulated_test_util.h"
#include "intercept/emulated/sluice_emu.h"

namespace sluice::intercept::testing {
namespace {

// Extracts the integer after "\"key\":" in a JSON line from sluice-spin.
int64_t Field(const std::string& line, const std::string& key) {
  const size_t at = line.find("\"" + key + "\":");
  if (at == std::string::npos) return -1;
  const size_t start = at + key.size() + 3;
  int64_t v = -1;
  (void)absl::SimpleAtoi(line.substr(start, line.find_first_of(",}", start) - start), &v);
  return v;
}

std::string ReadEvent(runtime::Subprocess& p, const std::string& event) {
  for (int i = 0; i < 4; ++i) {
    auto line = p.ReadLine(absl::Seconds(30));
    if (!line.ok()) return "";
    if (line->find("\"event\":\"" + event + "\"") != std::string::npos) return *line;
  }
  return "";
}

TEST(EmulatedProcessTest, ProcessesShareOneDeviceTimeline) {
  InitEmulated();
  // 8 SMs x 1 ms blocks, grid 8: each kernel holds the whole device for 1 ms.
  std::vector<std::string> args = {"--grid", "8", "--block-ns", "1000000", "--batch", "4",
                                   "--seconds", "1.5"};
  auto a = SpawnSpin(args);
  auto b = SpawnSpin(args);
  ASSERT_TRUE(a && b);
  const std::string ra = ReadEvent(*a, "result"), rb = ReadEvent(*b, "result");
  ASSERT_FALSE(ra.empty() || rb.empty()) << ra << " / " << rb;
  const double ka = double(Field(ra, "kernels")), kb = double(Field(rb, "kernels"));
  const int64_t first = std::min(Field(ra, "first_ns"), Field(rb, "first_ns"));
  const int64_t last = std::max(Field(ra, "last_ns"), Field(rb, "last_ns"));
  // One device: the kernels both completed (1 ms each) fit between the first and the last
  // completion, plus the batch each counted at its first completion.
  EXPECT_LE(ka + kb, double(last - first) / 1e6 + 2 * 4 + 1) << ra << " / " << rb;
  EXPECT_GT(ka, 0.25 * (ka + kb)) << ra << " / " << rb;  // neither starves
  EXPECT_GT(kb, 0.25 * (ka + kb)) << ra << " / " << rb;
  EXPECT_EQ(*a->Wait(), 0);
  EXPECT_EQ(*b->Wait(), 0);
}

TEST(EmulatedProcessTest, MemoryIsSharedAndAKilledProcessIsReclaimed) {
  InitEmulated();
  CUcontext ctx;
  ASSERT_EQ(cuDevicePrimaryCtxRetain(&ctx, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSetCurrent(ctx), CUDA_SUCCESS);
  size_t free_before, total;
  ASSERT_EQ(cuMemGetInfo(&free_before, &total), CUDA_SUCCESS);
  auto holder = SpawnSpin({"--mem-mb", "200", "--hold"});
  ASSERT_TRUE(holder);
  ASSERT_FALSE(ReadEvent(*holder, "ready").empty());
  size_t free_now;
  ASSERT_EQ(cuMemGetInfo(&free_now, &total), CUDA_SUCCESS);
  EXPECT_EQ(free_now, free_before - (200u << 20));
  CUdeviceptr p;
  EXPECT_EQ(cuMemAlloc(&p, 100 << 20), CUDA_ERROR_OUT_OF_MEMORY);  // 256 MiB device
  holder->Kill(SIGKILL);
  EXPECT_EQ(*holder->Wait(), 128 + SIGKILL);
  ASSERT_EQ(cuMemGetInfo(&free_now, &total), CUDA_SUCCESS);
  EXPECT_EQ(free_now, free_before);
  ASSERT_EQ(cuMemAlloc(&p, 100 << 20), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree(p), CUDA_SUCCESS);
  EXPECT_EQ(cuDevicePrimaryCtxRelease(0), CUDA_SUCCESS);
}

}  // namespace
}  // namespace sluice::intercept::testing
