// A compute shader (GLSL) that `cargo mcpp init --lane spirv` added: doubles every float of its
// buffer. cargo-mcpp compiles it to SPIR-V; the Rust surface reaches the words as
// `shaders::double_comp().code`.
#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer Data { float data[]; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < uint(data.length())) { data[i] = 2.0 * data[i]; }
}
