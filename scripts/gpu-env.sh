# Sourced by scripts/gpu-run.sh and scripts/gpu-check.sh: finds NVRTC, the CUDA headers, cuDNN
# and cuBLASLt on a GPU machine and exports what CubeCL and owt need to find them. Never puts a
# CUDA `stubs` directory on LD_LIBRARY_PATH (its fake libcuda would win and every CUDA call would
# fail with CUDA_ERROR_STUB_LIBRARY). Sets GPU_ENV_NVRTC, GPU_ENV_HEADER, GPU_ENV_CUDNN and
# GPU_ENV_CUBLASLT to what it found (or empty).

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
# cuDNN 9 and cuBLASLt, which owt loads at run time (cudarc tries libcudnn.so, then the
# sonames down to libcudnn.so.9): pip's nvidia-cudnn-cu13 beside PyTorch
# (site-packages/nvidia/cudnn/lib), cuBLASLt from the CUDA toolkit first (it matches the
# driver), else pip's (nvidia/cu13/lib or nvidia/cublas/lib). Their directories go after
# NVRTC's on the path.
GPU_ENV_CUDNN=$(find /usr/local /opt /usr/lib /root /home -name 'libcudnn.so.9*' 2>/dev/null | grep -v stubs | sort | head -n 1)
GPU_ENV_CUBLASLT=$( (find /usr/local/cuda*/ -name 'libcublasLt.so.1[0-9]*' 2>/dev/null; \
    find /opt /usr/lib /root /home -name 'libcublasLt.so.1[0-9]*' 2>/dev/null) | grep -v stubs | head -n 1)
for _gpu_env_lib in "$GPU_ENV_CUDNN" "$GPU_ENV_CUBLASLT"; do
    [ -n "$_gpu_env_lib" ] || continue
    _gpu_env_dir=$(dirname "$_gpu_env_lib")
    case ":$LD_LIBRARY_PATH:" in *":$_gpu_env_dir:"*) ;; *) export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$_gpu_env_dir" ;; esac
done
# CUDA headers: CUDA_PATH must hold include/cuda_runtime.h.
GPU_ENV_HEADER=
if [ -n "${CUDA_PATH:-}" ] && [ -f "$CUDA_PATH/include/cuda_runtime.h" ]; then
    GPU_ENV_HEADER="$CUDA_PATH/include/cuda_runtime.h"
else
    GPU_ENV_HEADER=$(find /usr/local /opt /usr/include -name cuda_runtime.h -path '*include*' 2>/dev/null | head -n 1)
    [ -n "$GPU_ENV_HEADER" ] && export CUDA_PATH=$(dirname "$(dirname "$GPU_ENV_HEADER")")
fi
unset _gpu_env_clean _gpu_env_nccl _gpu_env_lib _gpu_env_dir
