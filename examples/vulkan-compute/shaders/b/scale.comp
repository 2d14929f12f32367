#version 450

// data[i] = data[i] * data[i]: same stem as shaders/a/scale.comp, another directory,
// so another payload (`b::scale_comp`).
layout(local_size_x = WORKGROUP) in;
layout(std430, binding = 0) buffer Data { float data[]; };

void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= uint(data.length())) return;
    data[i] = data[i] * data[i];
}
