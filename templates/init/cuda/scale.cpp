// The CPU fallback of `kernels/scale.cu` (added by `cargo mcpp init --lane cuda`): the same
// entry point, compiled by the host C++ compiler when the build leaves CUDA out.
MCPP_EXPORT_C int scale_run(float* y, unsigned n) {
    for (unsigned i = 0; i < n; ++i) y[i] = 2.0f * y[i];
    return 0;
}
