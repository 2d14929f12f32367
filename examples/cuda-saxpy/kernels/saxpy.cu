// The device half of the island: y = a*x + y on the first CUDA device.
// MCPP_EXPORT_C comes from the generated header, given to nvcc as a forced include.
#include <cuda_runtime.h>
#include "saxpy_params.cuh"

__global__ void saxpy_kernel(float a, const float* x, float* y, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

static int fail(cudaError_t e) {
    return (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver) ? 1 : 2;
}

// 0: done; 1: no CUDA device is present (or no driver); 2: another CUDA error.
MCPP_EXPORT_C int saxpy_run(float a, const float* x, float* y, unsigned n) {
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) return fail(e);
    if (count == 0) return 1;
    float *dx = nullptr, *dy = nullptr;
    size_t bytes = size_t(n) * sizeof(float);
    if ((e = cudaMalloc(&dx, bytes)) != cudaSuccess) return fail(e);
    if ((e = cudaMalloc(&dy, bytes)) != cudaSuccess) { cudaFree(dx); return fail(e); }
    cudaMemcpy(dx, x, bytes, cudaMemcpyHostToDevice);
    cudaMemcpy(dy, y, bytes, cudaMemcpyHostToDevice);
    saxpy_kernel<<<(n + SAXPY_BLOCK - 1) / SAXPY_BLOCK, SAXPY_BLOCK>>>(a, dx, dy, n);
    e = cudaGetLastError();
    if (e == cudaSuccess) e = cudaMemcpy(y, dy, bytes, cudaMemcpyDeviceToHost);
    cudaFree(dx);
    cudaFree(dy);
    return e == cudaSuccess ? 0 : 2;
}

// Which half is linked, and on what it runs.
MCPP_EXPORT_C const char* saxpy_backend(char* name, unsigned len) {
    cudaDeviceProp p;
    if (len > 0 && cudaGetDeviceProperties(&p, 0) == cudaSuccess) {
        unsigned i = 0;
        for (; i + 1 < len && p.name[i]; ++i) name[i] = p.name[i];
        name[i] = 0;
    }
    return "cuda";
}
