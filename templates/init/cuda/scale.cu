// A CUDA kernel that `cargo mcpp init --lane cuda` (or `--island`) added, behind an island boundary: the
// marked entry point below is what Rust (and C++) call; `host/scale.cpp` is its CPU fallback,
// compiled instead when the build leaves CUDA out (`cargo mcpp build --no-accel`).
// MCPP_EXPORT_C comes from the generated boundary header (a forced include).
#include <cuda_runtime.h>

__global__ void scale_kernel(float* y, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * y[i];
}

// 0: done; 1: no CUDA device (or driver); 2: another CUDA error.
MCPP_EXPORT_C int scale_run(float* y, unsigned n) {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) return 1;
    float* d = nullptr;
    size_t bytes = size_t(n) * sizeof(float);
    if (cudaMalloc(&d, bytes) != cudaSuccess) return 2;
    cudaMemcpy(d, y, bytes, cudaMemcpyHostToDevice);
    scale_kernel<<<(n + 255) / 256, 256>>>(d, n);
    cudaError_t e = cudaMemcpy(y, d, bytes, cudaMemcpyDeviceToHost);
    cudaFree(d);
    return e == cudaSuccess ? 0 : 2;
}
