// The C++ seam: imports the generated kernels module and exposes a C++ API over it.
export module cuda_saxpy.seam;
import cuda_saxpy.kernels;

export namespace seam {
// y = a*x + y over n floats; 0 on success (the entry point's status otherwise).
int axpy(float a, const float* x, float* y, unsigned n) {
    return cuda_saxpy::kernels::saxpy_run(a, x, y, n);
}
}
