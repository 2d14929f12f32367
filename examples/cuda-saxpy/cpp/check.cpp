// A C++ translation unit calling the seam; Rust calls it as `cxx_check_saxpy`.
import cuda_saxpy.seam;

// Runs y = 3x + 1 over n floats through the seam and checks every element.
// Returns the entry point's status, or -1 when a result is wrong.
extern "C" int cxx_check_saxpy(unsigned n) {
    float* x = new float[n];
    float* y = new float[n];
    for (unsigned i = 0; i < n; ++i) { x[i] = float(i); y[i] = 1.0f; }
    int status = seam::axpy(3.0f, x, y, n);
    if (status == 0) {
        for (unsigned i = 0; i < n; ++i) {
            if (y[i] != 3.0f * float(i) + 1.0f) { status = -1; break; }
        }
    }
    delete[] x;
    delete[] y;
    return status;
}
