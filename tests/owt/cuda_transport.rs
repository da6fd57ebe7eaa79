//! CubeCL's CUDA runtime moves tensors between its GPUs itself (NCCL send/recv) and can
//! all-reduce across them, so a CUDA mesh over distinct GPUs goes device to device with NCCL's
//! all-reduce, while virtual ranks of one GPU never transfer. Built with `--features cuda`
//! (CI checks it compiles; running it needs no GPU: only the runtime's declared capability
//! and the mesh's choice are read).
#![cfg(feature = "cuda")]

use burn::backend::cuda::CudaDevice;
use owt_hybrid::Transport;

#[test]
fn a_cuda_mesh_over_distinct_gpus_goes_device_to_device() {
    let caps = owt::backends::cuda_capabilities();
    assert!(caps.device_to_device && caps.device_all_reduce, "{caps:?}");
    let two = vec![CudaDevice { index: 0 }, CudaDevice { index: 1 }];
    assert!(Transport::device_all_reduce(caps, &two));
    assert_eq!(
        owt::backends::mesh_over(caps, two, &owt::processes::Processes::solo()).unwrap().transport(),
        Transport::DeviceToDevice
    );
    let virtual_ranks = vec![CudaDevice { index: 0 }; 4];
    assert_eq!(
        owt::backends::mesh_over(caps, virtual_ranks, &owt::processes::Processes::solo()).unwrap().transport(),
        Transport::HostStaged
    );
}
