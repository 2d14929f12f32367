#pragma once
// Shared by both kernels: an edit recompiles exactly them.
__device__ inline unsigned global_index() { return blockIdx.x * blockDim.x + threadIdx.x; }
