# Sourced by scripts/gpu-run.sh and scripts/gpu-check.sh: finds NVRTC and the CUDA headers on a
# GPU machine and exports what CubeCL needs to find them. Never puts a CUDA `stubs` directory on
# LD_LIBRARY_PATH (its fake libcuda would win and every CUDA call would fail with
# CUDA_ERROR_STUB_LIBRARY). Sets GPU_ENV_NVRTC and GPU_ENV_HEADER to what it found (or empty).

# NVRTC: any libnvrtc.so* that is not a stub. The CUDA toolkit's own first (it matches the
# toolkit's headers), then a pip wheel's.
GPU_ENV_NVRTC=$(find /usr/local/cuda*/ /usr/local/cuda/targets /opt /usr/lib /root /home -name 'libnvrtc.so*' 2>/dev/null \
    | grep -v '/stubs/' | grep -v 'builtins' | sort -u | head -n 1)
_gpu_env_clean=$(printf '%s' "${LD_LIBRARY_PATH:-}" | tr ':' '\n' | grep -v stubs | paste -sd: -)
if [ -n "$GPU_ENV_NVRTC" ]; then
    export LD_LIBRARY_PATH="$(dirname "$GPU_ENV_NVRTC")${_gpu_env_clean:+:$_gpu_env_clean}"
else
    export LD_LIBRARY_PATH="$_gpu_env_clean"
fi
# NCCL as cudarc loads it (libnccl.so): pip's nvidia-nccl wheels ship only libnccl.so.2, so a
# link named libnccl.so goes in a directory of our own on the path.
if [ -z "$(ldconfig -p 2>/dev/null | grep 'libnccl.so ')" ]; then
    _gpu_env_nccl=$(find /usr /opt /root /home -name 'libnccl.so.2*' 2>/dev/null | head -n 1)
    if [ -n "$_gpu_env_nccl" ]; then
        mkdir -p "${GPU_ENV_LIBDIR:-/tmp/owt-gpu-lib}"
        ln -sf "$_gpu_env_nccl" "${GPU_ENV_LIBDIR:-/tmp/owt-gpu-lib}/libnccl.so"
        export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}${GPU_ENV_LIBDIR:-/tmp/owt-gpu-lib}"
    fi
fi
# CUDA headers: CUDA_PATH must hold include/cuda_runtime.h.
GPU_ENV_HEADER=
if [ -n "${CUDA_PATH:-}" ] && [ -f "$CUDA_PATH/include/cuda_runtime.h" ]; then
    GPU_ENV_HEADER="$CUDA_PATH/include/cuda_runtime.h"
else
    GPU_ENV_HEADER=$(find /usr/local /opt /usr/include -name cuda_runtime.h -path '*include*' 2>/dev/null | head -n 1)
    [ -n "$GPU_ENV_HEADER" ] && export CUDA_PATH=$(dirname "$(dirname "$GPU_ENV_HEADER")")
fi
unset _gpu_env_clean _gpu_env_nccl
