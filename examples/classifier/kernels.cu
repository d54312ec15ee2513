// Source of the classifier's PTX (kernels_ptx.h). The build does not need nvcc; regenerate with
//   nvcc -ptx -arch=compute_75 -O3 kernels.cu -o k.ptx
// then set `.version 6.4` / `.target sm_50` (the code uses nothing newer) and paste it into
// kernels_ptx.h. The emulated device runs DenseBody (classifier.cc) instead, with the same fma order.
extern "C" __global__ void sluice_dense(const float* in, const float* w, const float* bias,
                                        float* out, unsigned batch, unsigned in_dim,
                                        unsigned out_dim, unsigned relu) {
  unsigned idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= batch * out_dim) return;
  unsigned b = idx / out_dim, j = idx % out_dim;
  float acc = bias[j];
#pragma unroll 1
  for (unsigned i = 0; i < in_dim; ++i) acc = fmaf(in[b * in_dim + i], w[j * in_dim + i], acc);
  if (relu && acc < 0.0f) acc = 0.0f;
  out[idx] = acc;
}
