//! The cost of `Hybrid<B>`: one AlexNetSmall training step (forward, loss, backward, SGD) on
//! plain Flex against `Hybrid<Flex>` with K = 1 twice: held to Flex's own ops
//! (`conv_grad::set_backend_only`: the wrapper's own cost alone, target at most 3% slower) and
//! with owt's formulations (what single-device training runs), then K = 2, 4 virtual ranks
//! under the weird-trick placements, with the ledger of one step for each.
//! Steps alternate between configurations so machine noise hits all of them alike, and the
//! median step is compared, so a stall on the shared machine does not decide the ratio.
//! Run: `cargo bench --bench hybrid_overhead --profile dev`.

use std::time::Instant;

use burn::backend::{Autodiff, Flex};
use burn::optim::{GradientsParams, Optimizer, SgdConfig};
use burn::prelude::*;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::Distribution;
use owt_hybrid::{conv_grad, PlanKind};
use owt_hybrid::{Distributed, Hybrid, MeshDevice, Placement};
use owt_models::{AlexNet, AlexNetSmallConfig, Head};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const BATCH: usize = 128;
const ROUNDS: usize = 12;

struct Runner<B: AutodiffBackend, O> {
    model: Option<AlexNet<B>>,
    optim: O,
    x: Tensor<B, 4>,
    y: Tensor<B, 1, Int>,
}

impl<B: AutodiffBackend, O: Optimizer<AlexNet<B>, B>> Runner<B, O> {
    fn step(&mut self) {
        let model = self.model.take().expect("model");
        let loss = Head::Softmax.loss(model.forward(self.x.clone()), self.y.clone());
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        let model = self.optim.step(0.01, model, grads);
        // Wait for the result so the timing covers the whole step.
        let _ = model.fc8.bias.as_ref().expect("bias").val().into_data();
        self.model = Some(model);
    }
}

fn data() -> (TensorData, TensorData) {
    let x =
        Tensor::<Flex, 4>::random([BATCH, 1, 28, 28], Distribution::Normal(0.0, 1.0), &Default::default()).into_data();
    let y = TensorData::new((0..BATCH as i64).map(|i| i % 10).collect::<Vec<_>>(), [BATCH]);
    (x, y)
}

fn flex_runner() -> Runner<Autodiff<Flex>, impl Optimizer<AlexNet<Autodiff<Flex>>, Autodiff<Flex>>> {
    let (x, y) = data();
    let d = Default::default();
    Runner {
        model: Some(AlexNetSmallConfig::new().with_dropout(0.0).init(&d)),
        optim: SgdConfig::new().init::<Autodiff<Flex>, AlexNet<Autodiff<Flex>>>(),
        x: Tensor::from_data(x, &d),
        y: Tensor::from_data(y, &d),
    }
}

type H = Autodiff<Hybrid<Flex>>;

fn hybrid_runner(k: usize) -> (Runner<H, impl Optimizer<AlexNet<H>, H>>, MeshDevice<burn::backend::flex::FlexDevice>) {
    let (x, y) = data();
    let mesh = MeshDevice::virtual_ranks(Default::default(), k);
    let model = PlanKind::WeirdTrick.plan().apply(AlexNetSmallConfig::new().with_dropout(0.0).init::<H>(&mesh));
    let runner = Runner {
        model: Some(model),
        optim: SgdConfig::new().init::<H, AlexNet<H>>(),
        x: Tensor::<H, 4>::from_data(x, &mesh).distribute(Placement::Shard(0)),
        y: Tensor::<H, 1, Int>::from_data(y, &mesh).distribute(Placement::Shard(0)),
    };
    (runner, mesh)
}

fn main() {
    let mut flex = flex_runner();
    let mut control = flex_runner();
    let (mut held, _) = hybrid_runner(1);
    let mut hybrids: Vec<_> = [1, 2, 4].into_iter().map(hybrid_runner).collect();
    let meshes: Vec<_> = hybrids.iter().map(|(_, mesh)| mesh.clone()).collect();
    // One step function per configuration: Flex, a second identical Flex (the noise floor),
    // Hybrid at K = 1 held to Flex's ops, then Hybrid at K = 1, 2, 4 with owt's formulations.
    let mut steps: Vec<Box<dyn FnMut() + '_>> = vec![
        Box::new(|| flex.step()),
        Box::new(|| control.step()),
        Box::new(|| {
            conv_grad::set_backend_only(true);
            held.step();
            conv_grad::set_backend_only(false);
        }),
    ];
    for (r, _) in &mut hybrids {
        steps.push(Box::new(|| r.step()));
    }
    for step in &mut steps {
        step();
    }
    let mut times = vec![Vec::new(); steps.len()];
    for round in 0..ROUNDS {
        // Rotate the order so no configuration always runs right after the same one.
        let n = steps.len();
        for i in (0..n).map(|i| (i + round) % n) {
            let t = Instant::now();
            steps[i]();
            times[i].push(t.elapsed().as_secs_f64());
        }
    }
    let medians: Vec<f64> = times.into_iter().map(median).collect();
    let flex_time = medians[0];
    let vs_flex = |t: f64| 100.0 * (t / flex_time - 1.0);
    println!("alexnet-small (two towers, dropout off), batch {BATCH}, median of {ROUNDS} interleaved steps each");
    println!("flex              {:8.1} ms/step", 1e3 * flex_time);
    println!(
        "flex (control)    {:8.1} ms/step  ({:+.1}% vs flex: the noise floor)",
        1e3 * medians[1],
        vs_flex(medians[1])
    );
    println!(
        "hybrid K=1, Flex's ops {:8.1} ms/step  ({:+.1}% vs flex: the wrapper's own cost)",
        1e3 * medians[2],
        vs_flex(medians[2])
    );
    for ((mesh, step), time) in meshes.iter().zip(steps.iter_mut().skip(3)).zip(&medians[3..]) {
        mesh.reset_ledger();
        step();
        let ledger = mesh.ledger_snapshot();
        println!(
            "hybrid K={}, owt's  {:8.1} ms/step  ({:+.1}% vs flex)  {} bytes, {} messages per step, {} fallbacks",
            mesh.size(),
            1e3 * time,
            vs_flex(*time),
            ledger.total().bytes,
            ledger.total().messages,
            ledger.total_fallbacks()
        );
        for ((phase, collective), t) in &ledger.traffic {
            println!("    {phase:>6} {collective:<15} {:>10} bytes {:>5} messages", t.bytes, t.messages);
        }
    }
}

/// The middle value (upper middle for an even count).
fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}
