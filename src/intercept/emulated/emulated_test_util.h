// Helpers for the emulated-device tests: a private device per test process (its own UUID, so
// parallel tests never share a timeline or a memory capacity) and sluice-spin child processes
// on that device. Not thread-safe; call from the test thread.
#ifndef SLUICE_INTERCEPT_EMULATED_EMULATED_TEST_UTIL_H_
#define SLUICE_INTERCEPT_EMULATED_EMULATED_TEST_UTIL_H_

#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <cuda.h>

#include "gtest/gtest.h"
#include "runtime/common/subprocess.h"

namespace sluice::intercept::testing {

inline constexpr int kTestSms = 8;
inline constexpr int kTestMemoryMb = 256;

inline const std::string& TestUuid() {
  static const std::string uuid = [] {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "EMU-%08x-7e57-0000-0000-000000000001",
                  static_cast<unsigned>(getpid()));
    return std::string(buf);
  }();
  return uuid;
}

// Points this process at its private emulated device and initialises the driver once.
inline void InitEmulated() {
  static const bool once = [] {
    setenv("SLUICE_EMU_UUID", TestUuid().c_str(), 1);
    setenv("SLUICE_EMU_SM_COUNT", std::to_string(kTestSms).c_str(), 1);
    setenv("SLUICE_EMU_MEMORY_MB", std::to_string(kTestMemoryMb).c_str(), 1);
    std::atexit([] { shm_unlink(("/sluice-emu-" + TestUuid()).c_str()); });
    return cuInit(0) == CUDA_SUCCESS;
  }();
  ASSERT_TRUE(once);
}

// Starts sluice-spin on this process's emulated device with `args`.
inline std::unique_ptr<runtime::Subprocess> SpawnSpin(const std::vector<std::string>& args) {
  runtime::SpawnOptions o;
  o.argv = {SLUICE_SPIN_PATH};
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  o.env = {{"LD_LIBRARY_PATH", SLUICE_EMULATED_DIR}, {"SLUICE_EMU_UUID", TestUuid()}};
  o.unset_env = {"LD_PRELOAD"};
  auto p = runtime::Subprocess::Spawn(o);
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? std::move(*p) : nullptr;
}

}  // namespace sluice::intercept::testing

#endif  // SLUICE_INTERCEPT_EMULATED_EMULATED_TEST_UTIL_H_
