// A HIP kernel that `cargo mcpp init --lane hip` added, behind an island boundary: the marked
// entry point below is what Rust (and C++) call; `host/scale.cpp` is its CPU fallback, compiled
// instead when the build leaves HIP out (`cargo mcpp build --no-accel`).
// MCPP_EXPORT_C comes from the generated boundary header (a forced include).
#include <hip/hip_runtime.h>

__global__ void scale_kernel(float* y, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * y[i];
}

// 0: done; 1: no HIP device is present (hipErrorNoDevice, or no driver); 2: another HIP error.
MCPP_EXPORT_C int scale_run(float* y, unsigned n) {
    int count = 0;
    hipError_t e = hipGetDeviceCount(&count);
    if (e == hipErrorNoDevice || e == hipErrorInsufficientDriver || (e == hipSuccess && count == 0)) return 1;
    if (e != hipSuccess) return 2;
    float* d = nullptr;
    size_t bytes = size_t(n) * sizeof(float);
    if (hipMalloc(&d, bytes) != hipSuccess) return 2;
    hipMemcpy(d, y, bytes, hipMemcpyHostToDevice);
    hipLaunchKernelGGL(scale_kernel, dim3((n + 255) / 256), dim3(256), 0, 0, d, n);
    e = hipGetLastError();
    if (e == hipSuccess) e = hipMemcpy(y, d, bytes, hipMemcpyDeviceToHost);
    hipFree(d);
    return e == hipSuccess ? 0 : 2;
}
