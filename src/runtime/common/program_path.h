// Locating Sluice's own programs and libraries (sluice-spin, libsluice_cuda.so, the emulated
// driver, example binaries): an explicit option, else an environment variable, else the first
// existing fallback (the build tree, or a path next to the running executable). Used by the node
// agent and `sluice node share-test`. Thread-safe (reads the environment and the file system).
#ifndef SLUICE_RUNTIME_COMMON_PROGRAM_PATH_H_
#define SLUICE_RUNTIME_COMMON_PROGRAM_PATH_H_

#include <string>
#include <vector>

namespace sluice::runtime {

// The directory of the running executable (/proc/self/exe), or "." when it cannot be read.
std::string ExecutableDir();

// `option` when non-empty; else the value of `env_var` when set and non-empty; else the first
// of `fallbacks` that exists; else "".
std::string FindProgramPath(const std::string& option, const char* env_var,
                            const std::vector<std::string>& fallbacks);

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_COMMON_PROGRAM_PATH_H_
