//! torchvision's AlexNet weights on the wgpu test device: the import gives the logits PyTorch
//! computed, as on Flex (owt-models' tests, which hold the rest of the import's tests and the
//! fixture's readers this file includes).

#[allow(dead_code)]
#[path = "../../models/tests/models/torchvision_fixture.rs"]
mod fixture;

#[cfg(feature = "wgpu")]
use fixture::logits_gap;
pub(crate) use fixture::one_tensor_file;

#[cfg(feature = "wgpu")]
#[test]
fn imported_weights_give_pytorchs_logits_on_wgpu() {
    use burn::backend::wgpu::WgpuDevice;
    use owt::backends::WgpuSingle;
    assert!(
        !owt::kernel_cache::wgpu_adapters().is_empty(),
        "no Vulkan adapter found: install mesa-vulkan-drivers to run the wgpu tests on the CPU"
    );
    for file in ["alexnet.pth", "alexnet.safetensors"] {
        let gap = logits_gap::<WgpuSingle>(file, &WgpuDevice::Cpu);
        // Measured 3.0e-7 (lavapipe, 2026-12-01); the bound is 20x that.
        eprintln!("{file}: {gap:e} of the logit scale");
        assert!(gap <= 6e-6, "{file}: logits differ from PyTorch's by {gap:e} of their scale");
    }
}
