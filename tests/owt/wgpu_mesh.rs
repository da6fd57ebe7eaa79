//! Two real devices: a mesh of `WgpuDevice::Cpu` and `WgpuDevice::DefaultDevice` (two distinct
//! devices on Mesa lavapipe) runs a small conv + linear network forward and backward with the
//! same results as Flex. Needs `--features wgpu` and a Vulkan driver (mesa-vulkan-drivers).
#![cfg(feature = "wgpu")]

use burn::backend::wgpu::{CubeBackend, WgpuDevice, WgpuRuntime};
use burn::backend::{Autodiff, Flex};
use burn::prelude::*;
use burn::tensor::activation::{log_softmax, relu};
use burn::tensor::module::{conv2d, max_pool2d};
use burn::tensor::ops::ConvOptions;
use burn::tensor::Distribution;
use owt_hybrid::{Distributed, Hybrid, MeshDevice, Placement};

/// Fails the test in one line when this machine has no wgpu adapter at all, rather than in a
/// CubeCL worker's panic.
pub(crate) fn require_adapter() {
    if owt::kernel_cache::wgpu_adapters().is_empty() {
        panic!("no Vulkan adapter found: install mesa-vulkan-drivers (apt-get install mesa-vulkan-drivers) to run the wgpu tests on the CPU");
    }
}

type Ref = Autodiff<Flex>;
/// The wgpu backend without kernel fusion: fusion's per-device servers lose track of tensors
/// read back across two devices (burn-fusion 0.21 panics "Should have handle for tensor").
type Hw = Autodiff<Hybrid<CubeBackend<WgpuRuntime, f32, i32, u32>>>;

/// conv 3->4 (3x3, pad 1), relu, 2x2 max pool, flatten, linear 64->6, log-softmax NLL.
fn forward<B: Backend>(
    w1: Tensor<B, 4>,
    b1: Tensor<B, 1>,
    w2: Tensor<B, 2>,
    b2: Tensor<B, 1>,
    x: Tensor<B, 4>,
    y: Tensor<B, 1, Int>,
) -> Tensor<B, 1> {
    let n = x.dims()[0];
    let h = conv2d(x, w1, Some(b1), ConvOptions::new([1, 1], [1, 1], [1, 1], 1));
    let h: Tensor<B, 2> = max_pool2d(relu(h), [2, 2], [2, 2], [0, 0], [1, 1], false).reshape([n, 64]);
    let logits = h.matmul(w2) + b2.unsqueeze::<2>();
    log_softmax(logits, 1).gather(1, y.reshape([n, 1])).neg().mean()
}

/// lavapipe's f32 kernels against Flex's, relative to the largest magnitude: different
/// kernels (tiled matmul, direct conv) sum in other orders. Measured (2026-11-30, SPIR-V) at
/// most 3.5e-7; 1e-5 is about 30x that.
fn close(a: Vec<f32>, b: Vec<f32>, what: &str) {
    assert_eq!(a.len(), b.len(), "{what}: lengths");
    let scale = b.iter().fold(1e-6f32, |m, v| m.max(v.abs()));
    let diff = a.iter().zip(&b).fold(0f32, |m, (x, y)| m.max((x - y).abs()));
    assert!(diff <= 1e-5 * scale, "{what}: max diff {diff} (scale {scale})");
}

#[test]
fn two_wgpu_devices_match_flex() {
    require_adapter();
    let rd = Default::default();
    let normal = Distribution::Normal(0.0, 0.3);
    let w1 = Tensor::<Flex, 4>::random([4, 3, 3, 3], normal, &rd).into_data();
    let b1 = Tensor::<Flex, 1>::random([4], normal, &rd).into_data();
    let w2 = Tensor::<Flex, 2>::random([64, 6], normal, &rd).into_data();
    let b2 = Tensor::<Flex, 1>::random([6], normal, &rd).into_data();
    let x = Tensor::<Flex, 4>::random([6, 3, 8, 8], Distribution::Normal(0.0, 1.0), &rd).into_data();
    let y = TensorData::new((0..6i64).collect::<Vec<_>>(), [6]);

    let rw1 = Tensor::<Ref, 4>::from_data(w1.clone(), &rd).require_grad();
    let rb1 = Tensor::<Ref, 1>::from_data(b1.clone(), &rd).require_grad();
    let rw2 = Tensor::<Ref, 2>::from_data(w2.clone(), &rd).require_grad();
    let rb2 = Tensor::<Ref, 1>::from_data(b2.clone(), &rd).require_grad();
    let loss = forward(
        rw1.clone(),
        rb1.clone(),
        rw2.clone(),
        rb2.clone(),
        Tensor::from_data(x.clone(), &rd),
        Tensor::from_data(y.clone(), &rd),
    );
    let want_loss = loss.to_data().to_vec::<f32>().unwrap();
    let g = loss.backward();
    let want = [
        rw1.grad(&g).unwrap().into_data(),
        rb1.grad(&g).unwrap().into_data(),
        rw2.grad(&g).unwrap().into_data(),
        rb2.grad(&g).unwrap().into_data(),
    ]
    .map(|d| d.to_vec::<f32>().unwrap());

    let mesh = MeshDevice::new(vec![WgpuDevice::Cpu, WgpuDevice::DefaultDevice]);
    assert_ne!(mesh.rank_device(0), mesh.rank_device(1), "the two ranks must be distinct devices");
    for fc in [Placement::Replicate, Placement::Shard(1)] {
        let fc_bias = if fc == Placement::Shard(1) { Placement::Shard(0) } else { Placement::Replicate };
        let hw1 = Tensor::<Hw, 4>::from_data(w1.clone(), &mesh).require_grad();
        let hb1 = Tensor::<Hw, 1>::from_data(b1.clone(), &mesh).require_grad();
        let hw2 = Tensor::<Hw, 2>::from_data(w2.clone(), &mesh).distribute(fc).require_grad();
        let hb2 = Tensor::<Hw, 1>::from_data(b2.clone(), &mesh).distribute(fc_bias).require_grad();
        mesh.reset_ledger();
        let loss = forward(
            hw1.clone(),
            hb1.clone(),
            hw2.clone(),
            hb2.clone(),
            Tensor::<Hw, 4>::from_data(x.clone(), &mesh).distribute(Placement::Shard(0)),
            Tensor::from_data(y.clone(), &mesh),
        );
        close(loss.to_data().to_vec::<f32>().unwrap(), want_loss.clone(), &format!("fc {fc}: loss"));
        let g = loss.backward();
        let got = [
            hw1.grad(&g).unwrap().into_data(),
            hb1.grad(&g).unwrap().into_data(),
            hw2.grad(&g).unwrap().into_data(),
            hb2.grad(&g).unwrap().into_data(),
        ]
        .map(|d| d.to_vec::<f32>().unwrap());
        assert_eq!(got.len(), want.len());
        for (i, (a, b)) in got.into_iter().zip(want.iter()).enumerate() {
            close(a, b.clone(), &format!("fc {fc}: grad {i}"));
        }
        let ledger = mesh.ledger_snapshot();
        assert!(ledger.fallbacks.is_empty(), "fc {fc}: fallbacks {:?}", ledger.fallbacks);
        assert!(ledger.total().bytes > 0, "fc {fc}: the two devices must have exchanged data");
    }
}

/// CubeCL's wgpu runtime cannot move data between its devices itself (its server-to-server
/// send is unimplemented), so a wgpu mesh over two adapters stages through the host; virtual
/// ranks never transfer.
#[test]
fn a_wgpu_mesh_stages_through_the_host() {
    use burn::backend::wgpu::WgpuDevice;
    use owt_hybrid::Transport;
    let caps = owt::backends::wgpu_capabilities();
    assert!(!caps.device_to_device && !caps.device_all_reduce, "{caps:?}");
    let mesh = owt::backends::mesh_over(
        caps,
        vec![WgpuDevice::DefaultDevice, WgpuDevice::Cpu],
        &owt::processes::Processes::solo(),
    )
    .unwrap();
    assert_eq!(mesh.transport(), Transport::HostStaged);
    assert!(!mesh.has_device_all_reduce());
}

/// On a machine without a Vulkan driver the wgpu test above fails in one line naming the package
/// to install, not in a CubeCL worker's panic ("No CPU device found", `RecvError`). Runs this
/// test binary again, for that one test, with the Vulkan loader pointed at no driver.
#[test]
fn without_vulkan_the_wgpu_test_names_the_package_to_install() {
    let o = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["wgpu_mesh::two_wgpu_devices_match_flex", "--exact", "--test-threads", "1"])
        .env("VK_ICD_FILENAMES", "/nonexistent.json")
        .env("VK_DRIVER_FILES", "/nonexistent.json")
        .env("RUST_BACKTRACE", "0")
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "the test passed without a Vulkan driver:\n{out}");
    assert!(out.contains("install mesa-vulkan-drivers"), "{out}");
    assert!(!out.contains("RecvError") && !out.contains("No CPU device found"), "{out}");
}
