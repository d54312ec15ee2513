// Test helpers for libsluice_cuda.so: the library initialises once per process (from the
// environment), so each scenario runs in a fresh child process. RunInChild forks and runs the
// body there (gtest assertions work; failures make the child exit non-zero); RunProbe re-executes
// this test binary with extra environment (for what must be set before the process starts:
// LD_PRELOAD, LD_LIBRARY_PATH) and runs one InterceptProbe.DISABLED_* test in it (disabled so a
// normal run never executes it).
#ifndef SLUICE_INTERCEPT_TESTING_CHILD_H_
#define SLUICE_INTERCEPT_TESTING_CHILD_H_

#include <dlfcn.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace sluice::intercept::testing {

// Forks; the child runs `body` under alarm(timeout_s) and exits 0 iff no gtest assertion failed.
// The parent records a failure if the child failed, crashed or timed out.
void RunInChild(const std::function<void()>& body, int timeout_s = 60);

// Runs InterceptProbe.DISABLED_<name> in a fresh exec of this binary with `env` added. The probe
// must call ProbeOk() at its end; the parent checks the marker and the exit code.
void RunProbe(const std::string& name, const std::vector<std::pair<std::string, std::string>>& env,
              int timeout_s = 60);
// True when this process is the probe `name` (else the InterceptProbe test should skip).
bool IsProbe(const std::string& name);
void ProbeOk();

// dlopen of the interception library / fake driver (paths from the build), nullptr on failure
// (with the dlerror on stderr).
void* OpenIntercept();
void* OpenFakeDriver();

template <typename F>
F Sym(void* handle, const char* name) {
  return reinterpret_cast<F>(dlsym(handle, name));
}

// Sets the environment for a child scenario: the fake driver as the real one, a long fail
// timeout (no scenario depends on wall-clock staleness unless it sets its own).
void SetBaseEnv();

}  // namespace sluice::intercept::testing

#endif  // SLUICE_INTERCEPT_TESTING_CHILD_H_
