// CudaGpu: the function SDK's small helper over the CUDA *driver* API (libcuda.so.1, linked by
// SONAME), so a function runs on a real GPU and - through LD_LIBRARY_PATH - on the emulated
// device, under the interception library either way. It selects the instance's device, loads
// PTX modules, moves memory, launches kernels, synchronises (each Synchronize is an iteration
// boundary for the token server) and models compute time with the `spin` kernel. On the
// emulated device, kernels are registered with a host body (sluice_emu.h) so results match the
// PTX. Thread safety: methods may be called from any thread (each makes the context current),
// but not concurrently with each other; callers serialise (the SDK's worker thread does).
#ifndef SLUICE_RUNTIME_SDK_CUDA_GPU_H_
#define SLUICE_RUNTIME_SDK_CUDA_GPU_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

#include "intercept/emulated/sluice_emu.h"

namespace sluice::runtime {

using DevicePtr = uint64_t;  // a CUdeviceptr

// A kernel found in a loaded module (a CUfunction).
struct Kernel {
  void* handle = nullptr;
  std::string name;
};

// How an emulated kernel stands in for its PTX: the host body and the parameter sizes.
struct EmulatedKernel {
  std::string name;
  std::vector<uint32_t> param_sizes;
  SluiceEmuKernelBody body = nullptr;
};

// Blocks of the modelled-compute spin kernel. The node agent calibrates tokens with sluice-spin
// at 100 us blocks, so every spin block here lasts that long.
inline constexpr uint64_t kSpinBlockNs = 100000;

class CudaGpu {
 public:
  // cuInit, then the device whose UUID is $SLUICE_GPU_UUID ("GPU-..." or "EMU-..."; with one
  // visible device it is used whatever the UUID), else ordinal 0; retains its primary context and
  // loads the spin kernel. FailedPrecondition naming the driver call when any step fails.
  static absl::StatusOr<std::unique_ptr<CudaGpu>> Init();
  ~CudaGpu();  // frees what is still allocated, unloads modules, releases the context
  CudaGpu(const CudaGpu&) = delete;
  CudaGpu& operator=(const CudaGpu&) = delete;

  bool emulated() const { return emulated_; }
  const std::string& name() const { return name_; }
  const std::string& uuid() const { return uuid_; }
  int sm_count() const { return sm_count_; }

  // On the emulated device registers each kernel (block time: the device default) so that a
  // module naming it resolves; a no-op on a real GPU. Call before LoadModule.
  [[nodiscard]] absl::Status RegisterEmulated(const std::vector<EmulatedKernel>& kernels);
  // Loads `ptx` (a NUL-free PTX text) and returns its kernels `names`.
  absl::StatusOr<std::vector<Kernel>> LoadModule(const std::string& ptx,
                                                 const std::vector<std::string>& names);

  absl::StatusOr<DevicePtr> Alloc(size_t bytes);
  [[nodiscard]] absl::Status Free(DevicePtr ptr);
  [[nodiscard]] absl::Status CopyHtoD(DevicePtr dst, const void* src, size_t bytes);
  [[nodiscard]] absl::Status CopyDtoH(void* dst, DevicePtr src, size_t bytes);
  // Launches on the helper's stream; `params` as cuLaunchKernel's kernelParams.
  [[nodiscard]] absl::Status Launch(const Kernel& k, unsigned grid, unsigned block, void** params);
  // `blocks` blocks of kSpinBlockNs each (modelled compute); no-op for blocks <= 0.
  [[nodiscard]] absl::Status Spin(int64_t blocks);
  // Waits for everything launched so far (cuStreamSynchronize).
  [[nodiscard]] absl::Status Synchronize();

  int64_t allocated_bytes() const { return allocated_bytes_; }
  int64_t peak_bytes() const { return peak_bytes_; }

 private:
  CudaGpu() = default;
  [[nodiscard]] absl::Status MakeCurrent();

  bool emulated_ = false;
  std::string name_;
  std::string uuid_;
  int sm_count_ = 0;
  int device_ = 0;
  void* context_ = nullptr;  // CUcontext
  void* stream_ = nullptr;   // CUstream
  Kernel spin_;
  std::vector<void*> modules_;  // CUmodule
  std::vector<std::pair<DevicePtr, size_t>> allocations_;
  int64_t allocated_bytes_ = 0;
  int64_t peak_bytes_ = 0;
};

// Modelled compute blocks of a batch: base + per_item * batch, from $SLUICE_EXAMPLE_BLOCKS_BASE
// and $SLUICE_EXAMPLE_BLOCKS_PER_ITEM (defaults given by the caller). Negative values read 0.
int64_t ModelledBlocks(int64_t batch, int64_t default_base, int64_t default_per_item);

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_SDK_CUDA_GPU_H_
