//! The dry run and the cost model on every convolution of the grid (issue 77, point 3): for
//! each configuration and layout of `conv_grid`, a training step on shape-only devices
//! (`DryRun`, `Hybrid<Meta>`) moves what the real step on `Hybrid<Flex>` moved, collective by
//! collective and phase by phase (bytes and messages, from the two ledgers); its convolutions
//! cost the FLOPs of the kernel, stride, dilation and padding of each axis, computed here from
//! the configuration alone, split over the ranks without any rank computing twice; and the
//! cost model prices at least those FLOPs and prices communication exactly where the run
//! moved bytes.

use burn::nn::loss::CrossEntropyLossConfig;
use burn::optim::{GradientsParams, Optimizer, SgdConfig};
use burn::prelude::*;
use burn::tensor::backend::AutodiffBackend;
use owt_hybrid::{DeviceProfile, Distributed, DryRun, Hybrid, MeshDevice, Placement, Plan};

use crate::conv_grid_cases::{init, padding_pair, Case, GridNet, BATCH};
use crate::use_f64;

type M = burn::backend::Autodiff<Hybrid<owt_meta::Meta>>;
type H = burn::backend::Autodiff<Hybrid<burn::backend::Flex>>;

/// One training step and nothing else (no value read back, which would move pieces too).
fn train_step<B: AutodiffBackend>(
    model: GridNet<B>,
    x: Tensor<B, 4>,
    y: Tensor<B, 1, Int>,
    device: &B::Device,
) -> GridNet<B> {
    let loss = CrossEntropyLossConfig::new().init(device).forward(model.forward(x), y);
    let grads = GradientsParams::from_grads(loss.backward(), &model);
    SgdConfig::new().init::<B, GridNet<B>>().step(0.1, model, grads)
}

/// The batch laid out as `input` says (the labels split with the images' rows).
macro_rules! laid_out {
    ($b:ty, $batch:expr, $input:expr, $device:expr) => {{
        let (x, y) = $batch;
        let xs = Tensor::<$b, 4>::from_data(x, $device).distribute($input);
        let ys = Tensor::<$b, 1, Int>::from_data(y, $device);
        (xs, if $input == Placement::Shard(0) { ys.distribute($input) } else { ys })
    }};
}

/// The output rows and columns of the case's convolution, axis by axis.
fn output_side(case: &Case, axis: usize) -> usize {
    let (before, after) = padding_pair(case, axis);
    let reach = case.dilation[axis] * (case.kernel[axis] - 1) + 1;
    (case.input[axis] + before + after - reach) / case.stride[axis] + 1
}

/// Multiply-adds times 2 of the case's convolution over the whole batch.
fn conv_flops(case: &Case) -> u64 {
    let (c, o, g) = case.channels;
    (2 * BATCH * o * output_side(case, 0) * output_side(case, 1) * (c / g) * case.kernel[0] * case.kernel[1]) as u64
}

/// Each rank's FLOPs in ops named `op`.
fn flops_of(report: &owt_hybrid::DryRunReport, op: &str) -> Vec<u64> {
    report.costs.iter().map(|rank| rank.iter().filter(|c| c.op == op).map(|c| c.flops).sum()).collect()
}

/// The dry run of `plan` on `case` prices the step that `model` (placed by `plan` on `mesh`,
/// trained one step already) takes on `batch`: see the module's doc.
pub(super) fn priced_as_run(
    case: &Case,
    plan: &Plan,
    model: GridNet<H>,
    mesh: &MeshDevice<burn::backend::flex::FlexDevice>,
    batch: (TensorData, TensorData),
    what: &str,
) -> std::collections::BTreeMap<String, u64> {
    // The real step's traffic (a second step: what one moves does not depend on the weights).
    mesh.reset_ledger();
    let (x, y) = laid_out!(H, batch.clone(), plan.input, mesh);
    let _ = train_step(model, x, y, mesh);
    let real = mesh.ledger_snapshot();

    let dry = DryRun::new(2);
    use_f64::<M>(dry.mesh());
    let model: GridNet<M> = plan.try_apply(init(case, dry.mesh()), 2).unwrap_or_else(|e| panic!("{what}: {e}"));
    let shapes = (TensorData::zeros::<f64, _>(batch.0.shape.clone()), TensorData::zeros::<i64, _>(batch.1.shape));
    dry.begin_step();
    let (x, y) = laid_out!(M, shapes.clone(), plan.input, dry.mesh());
    let model = train_step(model, x, y, dry.mesh());
    // Run twice: nothing the first step moved counts in the second.
    dry.begin_step();
    let (x, y) = laid_out!(M, shapes, plan.input, dry.mesh());
    let _ = train_step(model, x, y, dry.mesh());
    let report = dry.report();

    assert_eq!(report.ledger.traffic, real.traffic, "{what}: the dry run's traffic against the real step's");
    assert_eq!(report.ledger.fallbacks, real.fallbacks, "{what}: ops gathered");

    let want = conv_flops(case);
    let (forward, weight_grad) = (flops_of(&report, "conv2d"), flops_of(&report, "conv2d_weight_backward"));
    for (op, ranks) in [("conv2d", &forward), ("conv2d_weight_backward", &weight_grad)] {
        // A pass without a rule runs gathered, whole on every rank (the ledger says which).
        let whole = real.fallbacks.contains_key(op);
        let want = if whole { 2 * want } else { want };
        assert_eq!(ranks.iter().sum::<u64>(), want, "{what}: {op} over the ranks {ranks:?}");
        assert!(ranks.iter().all(|&f| f > 0), "{what}: {op}: a rank idles {ranks:?}");
    }
    // The input is data, not a parameter: no gradient of it is computed.
    assert_eq!(flops_of(&report, "conv2d_x_backward"), [0, 0], "{what}");

    let profile = DeviceProfile::preset("h200-nvlink").unwrap();
    let price = report.predict(&profile);
    let busiest = forward.iter().zip(&weight_grad).map(|(f, w)| f + w).max().unwrap();
    let priced: u64 = price.phases.iter().map(|p| p.flops).sum();
    assert!(priced >= busiest, "{what}: {priced} FLOPs priced, the busiest rank's convolutions {busiest}");
    assert!(price.compute_s >= busiest as f64 / (profile.tflops * 1e12), "{what}: {price:?}");
    assert_eq!(price.comm_s > 0.0, real.total().bytes > 0, "{what}: {price:?} against {:?}", real.total());
    real.fallbacks
}
