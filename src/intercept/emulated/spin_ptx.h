// The PTX of the `spin` kernel: each block busy-waits `ns_per_block` on %globaltimer. One copy
// for every driver-API program that models GPU time with it (sluice-spin, the function SDK's
// CudaGpu, tools/gpu's cost_sampler_probe); the emulated driver knows "spin" by name and charges
// the same time per block. Header-only, C++17, no dependencies. Thread-safe (a constant).
#ifndef SLUICE_INTERCEPT_EMULATED_SPIN_PTX_H_
#define SLUICE_INTERCEPT_EMULATED_SPIN_PTX_H_

namespace sluice {

inline constexpr char kSpinPtx[] = R"(
.version 6.0
.target sm_50
.address_size 64
.visible .entry spin(.param .u64 spin_param_0)
{
  .reg .pred %p<2>;
  .reg .b64 %rd<5>;
  ld.param.u64 %rd1, [spin_param_0];
  mov.u64 %rd2, %globaltimer;
  add.s64 %rd3, %rd2, %rd1;
$L_loop:
  mov.u64 %rd4, %globaltimer;
  setp.lt.u64 %p1, %rd4, %rd3;
  @%p1 bra $L_loop;
  ret;
}
)";

}  // namespace sluice

#endif  // SLUICE_INTERCEPT_EMULATED_SPIN_PTX_H_
