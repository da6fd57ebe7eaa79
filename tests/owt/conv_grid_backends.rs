//! Issue 77, points 1 and 5: the grid of convolutions walked on every backend this build and
//! machine have, through the same door `owt train` takes (`owt::backends::run_on_mesh`, a mesh
//! of 2 ranks): Flex's virtual ranks always; with `--features wgpu`, two wgpu devices (lavapipe's
//! default and CPU adapters in CI); with `--features cuda` on a machine with an NVIDIA device,
//! two GPUs or two virtual ranks of one (cuDNN and cuBLASLt where they load). Each
//! configuration's small network is stepped once (forward, backward, SGD) under one of the
//! three layouts in turn, in f32, against Flex on one device. Nothing in the grid is refused on
//! any of them, and nothing may be computed wrong: a difference beyond rounding, or any failure,
//! fails the test naming the backend, the layout and the configuration. The Flex binary
//! (`parallel_training`) holds every layout of every configuration in f64.

use burn::backend::{Autodiff, Flex};
use burn::module::Module;
use burn::prelude::*;
use owt::backends::{run_on_mesh, BackendKind, MeshJob, MeshRequest};
use owt::train::checkpoint::{record_from_bytes, record_to_bytes};
use owt::OwtError;
use owt_hybrid::{Distributed, Hybrid, MeshDevice, Placement, Plan};

use crate::conv_grid_cases::{batch, grid, init, layouts, step, GridNet, Step};
use crate::relative_gap::relative_gap;

/// f32 kernels against Flex's, relative to each tensor's largest magnitude: other kernels sum
/// in other orders. Measured at most 5.4e-6 on the wgpu mesh (2026-12-07: a bias gradient
/// summed over 4 x 5 x 7 positions of an 11x11 kernel's output) and 1.3e-6 on Flex's ranks,
/// about 20x below this; a wrong weight or a padding on the wrong axis is off by the values
/// themselves. TF32 (CUDA's default for f32 convolutions and matmuls) rounds to 1e-3.
fn tolerance(kind: BackendKind) -> f64 {
    if kind == BackendKind::Cuda {
        1e-2
    } else {
        1e-4
    }
}

/// One device's step of every configuration: its starting weights (as checkpoint bytes) and
/// what the step gives.
fn one_device() -> Vec<(Vec<u8>, Step)> {
    let rd = Default::default();
    grid()
        .iter()
        .map(|case| {
            let (x, y) = batch(case);
            let model: GridNet<Autodiff<Flex>> = init(case, &rd);
            let bytes = record_to_bytes::<Autodiff<Flex>, _>(model.clone().into_record()).unwrap();
            // The weights as written (a lazily drawn parameter is drawn again by each clone).
            let model = model.load_record(record_from_bytes::<Autodiff<Flex>, _>(&bytes, &rd).unwrap());
            let (want, _) = step(model, Tensor::from_data(x, &rd), Tensor::from_data(y, &rd), &rd);
            (bytes, want)
        })
        .collect()
}

/// The walk on one mesh: each configuration under layout `i % 3`, against `reference`;
/// returns the largest gap and where, or the first configuration that differs.
struct GridWalk<'a> {
    reference: &'a [(Vec<u8>, Step)],
    tolerance: f64,
}

impl MeshJob for GridWalk<'_> {
    type Output = Result<(f64, String), String>;

    fn run<IB: Backend>(self, mesh: MeshDevice<IB::Device>) -> Result<Self::Output, OwtError> {
        type H<IB> = Autodiff<Hybrid<IB>>;
        let layouts = layouts();
        let mut worst = (0.0f64, String::new());
        for (i, (case, (bytes, want))) in grid().iter().zip(self.reference).enumerate() {
            let (name, rules, input) = layouts[i % layouts.len()].clone();
            let what = format!("{name}, {case:?}");
            let plan = Plan { name: name.into(), rules, input, ..owt_hybrid::PlanKind::DataParallel.plan() };
            let model: GridNet<H<IB>> = init(case, &mesh);
            let model = model.load_record(record_from_bytes::<H<IB>, _>(bytes, &mesh)?);
            let model = plan.try_apply(model, 2).map_err(|e| OwtError::input(format!("{what}: {e}")))?;
            let (x, y) = batch(case);
            let xs = Tensor::<H<IB>, 4>::from_data(x, &mesh).distribute(input);
            let ys = Tensor::<H<IB>, 1, Int>::from_data(y, &mesh);
            let ys = if input == Placement::Shard(0) { ys.distribute(input) } else { ys };
            let ((loss, grads, weights), _) = step(model, xs, ys, &mesh);
            if (loss - want.0).abs() > self.tolerance * want.0.abs() {
                return Ok(Err(format!("{what}: loss {loss} against {}", want.0)));
            }
            for (kind, got, want) in [("gradient of", grads, &want.1), ("updated", weights, &want.2)] {
                let (g, tensor) = relative_gap(&got, want);
                if g > self.tolerance {
                    return Ok(Err(format!("{what}: the {kind} {tensor} differs by {g:e} of its scale")));
                }
                if g > worst.0 {
                    worst = (g, format!("{what}: the {kind} {tensor}"));
                }
            }
        }
        Ok(Ok(worst))
    }
}

/// The backends this build has, and whether this machine has each one's device: Flex always;
/// wgpu where built (CI installs lavapipe; without an adapter the test fails naming the package,
/// as the other wgpu tests do); CUDA where built and an NVIDIA device node exists.
fn backends() -> Vec<BackendKind> {
    let mut kinds = vec![BackendKind::Flex];
    if cfg!(feature = "wgpu") {
        #[cfg(feature = "wgpu")]
        super::wgpu_mesh::require_adapter();
        kinds.push(BackendKind::Wgpu);
    }
    if cfg!(feature = "cuda") && std::path::Path::new("/dev/nvidia0").exists() {
        kinds.push(BackendKind::Cuda);
    }
    kinds
}

#[test]
fn every_convolution_of_the_grid_steps_on_every_backend_this_machine_has_as_on_one_device() {
    let reference = one_device();
    for kind in backends() {
        let walk = GridWalk { reference: &reference, tolerance: tolerance(kind) };
        match run_on_mesh(kind, MeshRequest::local(2, false), walk) {
            Ok(Ok((gap, at))) => {
                eprintln!(
                    "conv grid on {}: {} configurations, largest gap {gap:.2e} ({at})",
                    kind.name(),
                    reference.len()
                )
            }
            Ok(Err(wrong)) => panic!("{} computes the grid wrong: {wrong}", kind.name()),
            Err(e) => panic!("{} refused the grid: {e}", kind.name()),
        }
    }
}
