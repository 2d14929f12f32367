// The CPU fallback of `kernels/scale.hip` (added by `cargo mcpp init --lane hip`): the same
// entry point, compiled by the host C++ compiler when the build leaves HIP out.
MCPP_EXPORT_C int scale_run(float* y, unsigned n) {
    for (unsigned i = 0; i < n; ++i) y[i] = 2.0f * y[i];
    return 0;
}
