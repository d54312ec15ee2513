// Source of the trainer's PTX (kernels_ptx.h). The build does not need nvcc; regenerate with
//   nvcc -ptx -arch=compute_75 -O3 kernels.cu -o k.ptx
// then set `.version 6.4` / `.target sm_50` (the code uses nothing newer) and paste it into
// kernels_ptx.h. The emulated device runs the host bodies in linreg.cc, with the same fma order.
extern "C" __global__ void sluice_residual(const float* x, const float* y, const float* w,
                                           float* r, unsigned n, unsigned d) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float acc = -y[i];
#pragma unroll 1
  for (unsigned j = 0; j < d; ++j) acc = fmaf(x[i * d + j], w[j], acc);
  r[i] = acc;
}
extern "C" __global__ void sluice_sgd_update(const float* x, const float* r, float* w,
                                             unsigned n, unsigned d, float lr) {
  unsigned j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= d) return;
  float g = 0.0f;
#pragma unroll 1
  for (unsigned i = 0; i < n; ++i) g = fmaf(r[i], x[i * d + j], g);
  w[j] = w[j] - lr * (2.0f * g / (float)n);
}
