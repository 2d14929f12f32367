// The device half of the island: y = a*x + y on the first HIP device (AMD).
// MCPP_EXPORT_C comes from the generated header, given to hipcc as a forced include.
#include <hip/hip_runtime.h>
#include "saxpy_params.h"

__global__ void saxpy_kernel(float a, const float* x, float* y, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

static int fail(hipError_t e) {
    return e == hipErrorNoDevice ? 1 : 2;
}

// 0: done; 1: no HIP device is present (hipErrorNoDevice); 2: another HIP error.
MCPP_EXPORT_C int saxpy_run(float a, const float* x, float* y, unsigned n) {
    int count = 0;
    hipError_t e = hipGetDeviceCount(&count);
    if (e != hipSuccess) return fail(e);
    if (count == 0) return 1;
    float *dx = nullptr, *dy = nullptr;
    size_t bytes = size_t(n) * sizeof(float);
    if ((e = hipMalloc(&dx, bytes)) != hipSuccess) return fail(e);
    if ((e = hipMalloc(&dy, bytes)) != hipSuccess) { hipFree(dx); return fail(e); }
    hipMemcpy(dx, x, bytes, hipMemcpyHostToDevice);
    hipMemcpy(dy, y, bytes, hipMemcpyHostToDevice);
    hipLaunchKernelGGL(saxpy_kernel, dim3((n + SAXPY_BLOCK - 1) / SAXPY_BLOCK), dim3(SAXPY_BLOCK), 0, 0, a, dx, dy, n);
    e = hipGetLastError();
    if (e == hipSuccess) e = hipMemcpy(y, dy, bytes, hipMemcpyDeviceToHost);
    hipFree(dx);
    hipFree(dy);
    return e == hipSuccess ? 0 : 2;
}

// Which half is linked, and on what it runs.
MCPP_EXPORT_C const char* saxpy_backend(char* name, unsigned len) {
    hipDeviceProp_t p;
    if (len > 0 && hipGetDeviceProperties(&p, 0) == hipSuccess) {
        unsigned i = 0;
        for (; i + 1 < len && p.name[i]; ++i) name[i] = p.name[i];
        name[i] = 0;
    }
    return "hip";
}
