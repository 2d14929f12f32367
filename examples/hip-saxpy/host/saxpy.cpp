// The host fallback of the island: the same entry points on the CPU. Compiled (by the cc
// crate's C++ compiler) only in builds whose accelerator set leaves the .hip out (--no-accel).
#include "hip_saxpy.kernels.h"

MCPP_EXPORT_C int saxpy_run(float a, const float* x, float* y, unsigned n) {
    for (unsigned i = 0; i < n; ++i) y[i] = a * x[i] + y[i];
    return 0;
}

MCPP_EXPORT_C const char* saxpy_backend(char* name, unsigned len) {
    const char cpu[] = "CPU";
    unsigned i = 0;
    for (; len > 0 && i + 1 < len && cpu[i]; ++i) name[i] = cpu[i];
    if (len > 0) name[i] = 0;
    return "host";
}
