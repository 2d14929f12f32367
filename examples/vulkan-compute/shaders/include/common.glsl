// Included by shaders/a/scale.comp: the affine map it applies to every element.
// src/main.rs reads SCALE and OFFSET from this file to check the result.
const float SCALE = 3.0;
const float OFFSET = 1.0;

float transform(float x) {
    return x * SCALE + OFFSET;
}
