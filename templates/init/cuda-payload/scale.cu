// A CUDA kernel that `cargo mcpp new --lane cuda --payload` added, compiled device-only to a
// cubin and PTX per architecture of `accel` and embedded (`output = "cubin+ptx"`). The program
// loads the image the generated selection function picks for the GPU, through the driver API.
extern "C" __global__ void scale(float* y, float s, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = s * y[i];
}
