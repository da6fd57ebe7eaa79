//! The cost of `Hybrid<B>`: one AlexNetSmall training step (forward, loss, backward, SGD) on
//! plain Flex against `Hybrid<Flex>` with K = 1 (target: at most 3% slower) and K = 2, 4
//! virtual ranks under the weird-trick placements, with the ledger of one step for each.
//! Steps alternate between configurations so machine noise hits all of them alike.
//! Run: `cargo bench --bench hybrid_overhead --profile dev`.

use std::time::Instant;

use burn::backend::{Autodiff, Flex};
use burn::module::AutodiffModule;
use burn::optim::{GradientsParams, Optimizer, SgdConfig};
use burn::prelude::*;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::Distribution;
use owt::parallel::place_parameters;
use owt_hybrid::{Distributed, Hybrid, MeshDevice, Placement};
use owt_models::{AlexNet, AlexNetSmallConfig, Head};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const BATCH: usize = 128;
const ROUNDS: usize = 6;

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

fn weird_trick(path: &str, _shape: &[usize]) -> Placement {
    match (path.starts_with("fc"), path.ends_with("weight")) {
        (true, true) => Placement::Shard(1),
        (true, false) => Placement::Shard(0),
        _ => Placement::Replicate,
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
    let model = place_parameters(AlexNetSmallConfig::new().with_dropout(0.0).init::<H>(&mesh), weird_trick);
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
    let mut hybrids: Vec<_> = [1, 2, 4].into_iter().map(hybrid_runner).collect();
    flex.step();
    for (r, _) in &mut hybrids {
        r.step();
    }
    let mut flex_time = 0.0;
    let mut hybrid_time = vec![0.0; hybrids.len()];
    for _ in 0..ROUNDS {
        let t = Instant::now();
        flex.step();
        flex_time += t.elapsed().as_secs_f64();
        for (i, (r, _)) in hybrids.iter_mut().enumerate() {
            let t = Instant::now();
            r.step();
            hybrid_time[i] += t.elapsed().as_secs_f64();
        }
    }
    let per = |s: f64| 1e3 * s / ROUNDS as f64;
    println!("alexnet-small (two towers, dropout off), batch {BATCH}, {ROUNDS} interleaved steps each");
    println!("flex              {:8.1} ms/step", per(flex_time));
    for (i, (r, mesh)) in hybrids.iter_mut().enumerate() {
        mesh.reset_ledger();
        r.step();
        let ledger = mesh.ledger_snapshot();
        println!(
            "hybrid K={}        {:8.1} ms/step  ({:+.1}% vs flex)  {} bytes, {} messages per step, {} fallbacks",
            mesh.size(),
            per(hybrid_time[i]),
            100.0 * (hybrid_time[i] / flex_time - 1.0),
            ledger.total().bytes,
            ledger.total().messages,
            ledger.total_fallbacks()
        );
        for ((phase, collective), t) in &ledger.traffic {
            println!("    {phase:>6} {collective:<15} {:>10} bytes {:>5} messages", t.bytes, t.messages);
        }
    }
    let _ = flex.model.take().map(|m| m.valid());
}
