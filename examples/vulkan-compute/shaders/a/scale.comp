#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

// data[i] = data[i] * SCALE + OFFSET
layout(local_size_x = WORKGROUP) in;
layout(std430, binding = 0) buffer Data { float data[]; };

void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= uint(data.length())) return;
    data[i] = transform(data[i]);
}
