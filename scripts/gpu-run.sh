#!/bin/sh
# Run on the GPU machine (carry .gpu and .gl; scripts/gpu-build.sh makes them): the release builds of examples/cuda-saxpy
# (nvcc 13.0.88 wheels: sm_90 SASS + compute_90 PTX, static cudart; clang-19 with the CUDA 12.9
# layout: sm_90), of examples/cuda-ptx (PTX + fat binary through cudarc) and of examples/vulkan-compute (SPIR-V embedded, run with ash on the GPU). Also the programs `cargo mcpp new --lane cuda --island` and `--lane spirv` generate (init-cuda, init-vulkan).
cd "$(dirname "$0")/../.gpu" || exit 1
nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader || true
rc=0
# examples/cuda-ptx: PTX (affine) and a fat binary (scale) embedded, loaded through cudarc.
for b in cuda-saxpy-nvcc cuda-saxpy-clang cuda-ptx init-cuda; do
  echo "== $b"
  ./"$b" || { s=$?; echo "$b exited $s"; rc=$s; }
done
echo "== vulkan-compute"
for f in ../.gl/*.deb; do dpkg -x "$f" /; done; ldconfig
if [ ! -e /usr/share/vulkan/icd.d/nvidia_icd.json ] && [ -e /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]; then
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
fi
./vulkan-compute || { s=$?; echo "vulkan-compute exited $s"; rc=$s; }
echo "== init-vulkan"
./init-vulkan || { s=$?; echo "init-vulkan exited $s"; rc=$s; }
exit $rc
