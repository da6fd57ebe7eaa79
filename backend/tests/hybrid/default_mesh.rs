//! `MeshDevice::set_default` and `MeshDevice::creating`: Burn code that makes its tensors on
//! `Default::default()` runs on the mesh a program chose, split as it asked; a second choice,
//! or a choice after the default was given out, is refused in one line. The default is
//! process-wide, so each case that sets it runs in a process of its own (this test binary run
//! again on that one test).

use std::process::Command;

use burn::backend::flex::FlexDevice;
use burn::backend::Flex;
use burn::prelude::*;
use owt_hybrid::{Distributed, Hybrid, MeshDevice, Placement};

type H = Hybrid<Flex>;

const CHILD: &str = "OWT_DEFAULT_MESH_CASE";

/// Whether this process is the one `in_own_process(name)` started for `name`.
fn is_child(name: &str) -> bool {
    std::env::var(CHILD).is_ok_and(|v| v == name)
}

/// Runs the test `default_mesh::{name}` in a fresh process and fails with its output if it did.
fn in_own_process(name: &str) {
    let out = Command::new(std::env::current_exe().unwrap())
        .args([&format!("default_mesh::{name}"), "--exact", "--nocapture", "--test-threads", "1"])
        .env(CHILD, name)
        .output()
        .expect("run the test binary again");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{name} failed in its own process:\n{text}");
    assert!(text.contains("1 passed"), "{name} did not run in its own process:\n{text}");
}

/// Ordinary Burn code: every tensor made on the default device.
fn scores<B: Backend>() -> Tensor<B, 2> {
    let device = Default::default();
    let x = Tensor::<B, 1, Int>::arange(0..24, &device).float().reshape([8, 3]).div_scalar(10.0);
    let w = Tensor::<B, 2>::from_floats([[0.5, -1.0], [2.0, 0.25], [-0.75, 1.5]], &device);
    burn::tensor::activation::softmax(x.matmul(w).add_scalar(1.0), 1)
}

#[test]
fn code_on_the_default_device_runs_on_the_chosen_mesh() {
    if !is_child("code_on_the_default_device_runs_on_the_chosen_mesh") {
        return in_own_process("code_on_the_default_device_runs_on_the_chosen_mesh");
    }
    let mesh = MeshDevice::virtual_ranks(FlexDevice, 2).creating(Placement::Shard(0));
    MeshDevice::set_default(&mesh).unwrap();
    // The same handle again is no change.
    MeshDevice::set_default(&mesh).unwrap();
    let default = MeshDevice::<FlexDevice>::default();
    assert_eq!((default.size(), default.creation()), (2, Placement::Shard(0)));
    assert_eq!(default, mesh);

    let on_mesh = scores::<H>();
    assert_eq!(on_mesh.placement(), Placement::Shard(0), "the rows stay split over the 2 ranks");
    assert_eq!(mesh.ledger_snapshot().total_fallbacks(), 0, "no op ran gathered");
    let on_one = scores::<Flex>();
    on_mesh.into_data().assert_approx_eq::<f32>(&on_one.into_data(), burn::tensor::Tolerance::absolute(1e-6));

    // Another mesh, or the same mesh creating another placement, is refused in one line.
    for other in [MeshDevice::virtual_ranks(FlexDevice, 2), mesh.creating(Placement::Replicate)] {
        let err = MeshDevice::set_default(&other).unwrap_err().to_string();
        assert!(err.contains("was set already") && !err.contains('\n'), "{err}");
    }
    assert_eq!(MeshDevice::<FlexDevice>::default().creation(), Placement::Shard(0), "the first choice stands");
}

#[test]
fn set_default_refuses_once_the_default_was_given_out() {
    if !is_child("set_default_refuses_once_the_default_was_given_out") {
        return in_own_process("set_default_refuses_once_the_default_was_given_out");
    }
    let first = MeshDevice::<FlexDevice>::default();
    let tensor = Tensor::<H, 1>::ones([4], &Default::default());
    let err = MeshDevice::set_default(&MeshDevice::virtual_ranks(FlexDevice, 2)).unwrap_err().to_string();
    assert!(
        err.contains("already gave out") && err.contains("before the first tensor") && !err.contains('\n'),
        "{err}"
    );
    assert_eq!(MeshDevice::<FlexDevice>::default(), first, "the mesh tensors live on stays the default");
    assert_eq!(tensor.device(), first);
}

#[test]
fn tensors_are_never_created_pending() {
    let mesh = MeshDevice::virtual_ranks(FlexDevice, 2);
    let panic =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| mesh.creating(Placement::PARTIAL_SUM))).unwrap_err();
    let text = panic.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(text.contains("created Replicate or Shard(d)"), "{text}");
}

#[test]
fn a_creation_placement_splits_what_splits_and_replicates_the_rest() {
    let mesh = MeshDevice::virtual_ranks(FlexDevice, 3).creating(Placement::Shard(1));
    let cases: [(&[usize], Placement); 4] = [
        (&[2, 6], Placement::Shard(1)),
        (&[6, 2], Placement::Replicate), // 2 columns do not split over 3 ranks
        (&[6], Placement::Replicate),    // no dimension 1
        (&[1, 3, 4], Placement::Shard(1)),
    ];
    for (shape, want) in cases {
        let n: usize = shape.iter().product();
        let data = TensorData::new((0..n).map(|v| v as f32).collect::<Vec<_>>(), shape.to_vec());
        let placement = match shape.len() {
            1 => Tensor::<H, 1>::from_data(data.clone(), &mesh).placement(),
            2 => Tensor::<H, 2>::from_data(data.clone(), &mesh).placement(),
            _ => Tensor::<H, 3>::from_data(data.clone(), &mesh).placement(),
        };
        assert_eq!(placement, want, "{shape:?}");
    }
    // Tensors Burn makes on a created tensor's device are created the same way.
    let t = Tensor::<H, 2>::zeros([2, 6], &mesh);
    assert_eq!(Tensor::<H, 2>::ones([4, 9], &t.device()).placement(), Placement::Shard(1));
    assert_eq!(Tensor::<H, 2>::ones([4, 9], &mesh.creating(Placement::Replicate)).placement(), Placement::Replicate);
}
