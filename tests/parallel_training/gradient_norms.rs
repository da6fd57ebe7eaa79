//! `gradient_norms` (`owt bench --gradient-norms`, the diagnostic that finds the layer where a
//! mesh leaves one device): each parameter's figure is the L2 norm of the gradient the step
//! applies. Computed another way: one SGD step at rate 1 without weight decay moves each
//! weight by exactly its gradient (the first step's velocity is the gradient itself), so the
//! norm of the weights' change is the gradient's norm, in f64 up to the rounding of the
//! weights. On one device and on a 2-rank mesh under data parallelism and the weird trick.

use std::collections::BTreeMap;

use super::*;
use owt::train::gradient_norms;

/// The norms `gradient_norms` gives for batch 0 and the norms of the weights' change in one
/// step at rate 1 on the same batch, by parameter path.
fn norms_and_moves<B: burn::tensor::backend::AutodiffBackend, L: StepLayout<B>>(
    layout: &L,
    config: &TrainConfig,
    weights: &[u8],
) -> (BTreeMap<String, f64>, BTreeMap<String, f64>) {
    let arch = config.model.architecture().unwrap();
    let device = layout.device();
    let model = placed_model(layout, config, weights);
    let (x, y) = batch(0, config.batch, arch.input, arch.classes);
    let (x, y) = (layout.place_input(Tensor::from_data(x, device)), layout.place_labels(Tensor::from_data(y, device)));
    let key = DropoutKey::new(config.seed, 0);
    let norms = gradient_norms(layout, &model, config.head, key, x.clone(), y.clone());
    let before = parameter_values(&layout.compute_module(&model));
    let mut optim = sgd::<B>(config);
    let (model, _) = train_step(layout, model, &mut optim, 1.0, config.head, FcUpdate::PerStep, key, x, y);
    let after = parameter_values(&layout.compute_module(&model));
    let moves = before
        .into_iter()
        .zip(after)
        .map(|((name, b), (_, a))| (name, b.iter().zip(&a).map(|(b, a)| (b - a) * (b - a)).sum::<f64>().sqrt()))
        .collect();
    (norms, moves)
}

fn assert_norms_are_the_moves(norms: &BTreeMap<String, f64>, moves: &BTreeMap<String, f64>, what: &str) {
    assert_eq!(norms.keys().collect::<Vec<_>>(), moves.keys().collect::<Vec<_>>(), "{what}: every parameter, by path");
    for (name, norm) in norms {
        let moved = moves[name];
        assert!(moved > 0.0, "{what}: {name} has no gradient to compare");
        // The change w - (w - g) rounds at the weight's last bit: 1e-12 is far above that.
        assert!((norm - moved).abs() <= 1e-12 * moved.max(1e-3), "{what}: {name}: norm {norm:e}, moved {moved:e}");
    }
}

#[test]
fn gradient_norms_are_the_l2_norms_of_the_gradients_the_step_applies() {
    let spec = small(2);
    let config = TrainConfig { weight_decay: 0.0, ..config(spec.clone(), 8, FcUpdate::PerStep) };
    let weights = initial_weights(&spec);
    let (norms, moves) = norms_and_moves(&SingleDevice::<Ref>::new(Default::default()), &config, &weights);
    assert_norms_are_the_moves(&norms, &moves, "one device");
    for plan in [PlanKind::DataParallel, PlanKind::WeirdTrick] {
        let mesh = MeshDevice::virtual_ranks(Default::default(), 2);
        use_f64::<H>(&mesh);
        let layout = MeshLayout::<Flex>::new(mesh, plan.plan(), Exchange::AllGather);
        let (norms, moves) = norms_and_moves(&layout, &config, &weights);
        assert_norms_are_the_moves(&norms, &moves, plan.name());
    }
}
