/* Extensions of the emulated CUDA driver (libcuda.so.1 from src/intercept/emulated): kernels a
 * test program can register so that modules naming them (PTX `.entry NAME` or a line
 * `sluice-emu-kernel NAME`) resolve, plus device statistics. Resolve these with dlsym on a real
 * driver they are absent, which is how a program tells the two apart. Thread-safe. */
#ifndef SLUICE_INTERCEPT_EMULATED_SLUICE_EMU_H_
#define SLUICE_INTERCEPT_EMULATED_SLUICE_EMU_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct SluiceEmuDim3 {
  unsigned x, y, z;
} SluiceEmuDim3;

/* Host code standing for a kernel's effect on memory; runs once per launch, on the launching
 * thread, with the launch's kernelParams (device pointers are host addresses). May be NULL. */
typedef void (*SluiceEmuKernelBody)(void** params, SluiceEmuDim3 grid, SluiceEmuDim3 block,
                                    void* user);

/* Registers or replaces kernel `name`. Each block occupies one SM for `block_ns` ns (0: the
 * device default, SLUICE_EMU_BLOCK_NS); if `cost_param` >= 0 the per-block time is instead read
 * at launch from that kernel parameter (an unsigned 64-bit value). `param_sizes[param_count]`
 * are the parameters' sizes in bytes (needed to copy them into graph nodes and to read a
 * CU_LAUNCH_PARAM_BUFFER_POINTER buffer, laid out with natural alignment). Returns 0
 * (CUDA_SUCCESS), 1 (CUDA_ERROR_INVALID_VALUE) or 100 (CUDA_ERROR_NO_DEVICE). Built in:
 * "spin" (spin(u64 ns_per_block), cost_param 0), "noop" () and "fill_u32"
 * (fill_u32(u32* dst, u32 value, u64 count): the body fills dst[0..count)). */
int sluiceEmuRegisterKernel(const char* name, uint64_t block_ns, int cost_param,
                            const uint32_t* param_sizes, int param_count,
                            SluiceEmuKernelBody body, void* user);

typedef struct SluiceEmuStats {
  char uuid[64];
  int sm_count;
  int64_t memory_bytes;      /* device capacity */
  int64_t memory_used_bytes; /* by all live processes */
  int64_t kernels_run;       /* by all processes since the device segment was created */
  int64_t blocks_run;
} SluiceEmuStats;

/* Fills `out` (cuInit must have succeeded). Returns 0, or 3 (CUDA_ERROR_NOT_INITIALIZED). */
int sluiceEmuGetStats(SluiceEmuStats* out);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* SLUICE_INTERCEPT_EMULATED_SLUICE_EMU_H_ */
