//! Any convolution a Burn user writes (issue 77, point 1, on Flex): a grid of `Conv2d`
//! configurations (kernels 1x7, 7x1, 3x5, 11x11; strides (1,1), (2,1), (1,3), (4,4); dilations
//! (1,1), (2,1), (2,3); padding symmetric, asymmetric (`Explicit` with top != bottom and
//! left != right), `Same` and `Valid`; groups 1, 2 and depthwise; channel counts that do and
//! do not split over 2 ranks; odd input sides), each in a small network (conv, ReLU, mean over
//! the map, linear), trained one SGD step on one device and on `Hybrid<Flex>` on 2 ranks under
//! data parallelism (batch shards), model parallelism over the output channels (filters and
//! bias split) and the two towers' layout (filters and input channels split): the loss, every
//! gradient and every updated weight equal one device's in f64 within 1e-10 of each tensor's
//! scale. Each configuration and layout is then priced by a dry run (`conv_grid_costs`).

use burn::backend::{Autodiff, Flex};
use burn::module::Module;
use burn::prelude::*;
use owt::train::checkpoint::{record_from_bytes, record_to_bytes};
use owt_hybrid::{Distributed, Hybrid, MeshDevice, Placement, Plan};

use crate::conv_grid_cases::{batch, grid, init, layouts, step, GridNet};
use crate::{relative_gap, serial, use_f64};

type Ref = Autodiff<Flex>;
type H = Autodiff<Hybrid<Flex>>;

/// Relative tolerance against one device, as the other one-step tests hold (f64).
const TOLERANCE: f64 = 1e-10;

#[test]
fn every_convolution_of_the_grid_steps_on_two_ranks_as_on_one_device_and_as_its_dry_run_prices_it() {
    let rd = Default::default();
    use_f64::<Ref>(&rd);
    let cases = grid();
    assert!(cases.len() >= 150, "{}", cases.len());
    let (mut compared, mut ran_gathered) = (0, 0);
    for case in &cases {
        let (x, y) = batch(case);
        let model: GridNet<Ref> = {
            let _turn = serial();
            init(case, &rd)
        };
        let bytes = record_to_bytes::<Ref, _>(model.clone().into_record()).unwrap();
        let model = model.load_record(record_from_bytes::<Ref, _>(&bytes, &rd).unwrap());
        let (want, _) = step(model, Tensor::from_data(x.clone(), &rd), Tensor::from_data(y.clone(), &rd), &rd);
        for (name, rules, input) in layouts() {
            // A split dimension needs an entry per rank (the two towers' input channels too).
            if input == Placement::Shard(1) && case.channels.0 < 2 {
                continue;
            }
            let mesh = MeshDevice::virtual_ranks(rd, 2);
            use_f64::<H>(&mesh);
            let plan = Plan { name: name.into(), rules, input, ..owt_hybrid::PlanKind::DataParallel.plan() };
            let model: GridNet<H> = {
                let _turn = serial();
                init(case, &mesh)
            };
            let model = model.load_record(record_from_bytes::<H, _>(&bytes, &mesh).unwrap());
            let model = plan.try_apply(model, 2).unwrap_or_else(|e| panic!("{name} {case:?}: {e}"));
            let xs = Tensor::<H, 4>::from_data(x.clone(), &mesh).distribute(input);
            let ys = Tensor::<H, 1, Int>::from_data(y.clone(), &mesh);
            let ys = if input == Placement::Shard(0) { ys.distribute(input) } else { ys };
            let ((loss, grads, weights), model) = step(model, xs, ys, &mesh);
            let what = format!("{name}, {case:?}");
            assert!((loss - want.0).abs() <= TOLERANCE * want.0.abs(), "{what}: loss {loss} against {}", want.0);
            let (gap, tensor) = relative_gap(&grads, &want.1);
            assert!(gap <= TOLERANCE, "{what}: the gradient of {tensor} differs by {gap:e} of its scale");
            let (gap, tensor) = relative_gap(&weights, &want.2);
            assert!(gap <= TOLERANCE, "{what}: the updated {tensor} differs by {gap:e} of its scale");
            let gathered =
                super::conv_grid_costs::priced_as_run(case, &plan, model, &mesh, (x.clone(), y.clone()), &what);
            // Every pass has a rank-local rule but split filters of groups that do not divide
            // over the ranks (3 depthwise groups on 2 ranks), which run whole on each rank.
            let (_, _, groups) = case.channels;
            if !plan.rules.is_empty() && groups > 1 && groups % 2 != 0 {
                assert!(gathered.contains_key("conv2d"), "{what}: {gathered:?}");
                ran_gathered += 1;
            } else {
                assert!(gathered.is_empty(), "{what}: ran gathered {gathered:?}");
            }
            compared += 1;
        }
    }
    eprintln!(
        "conv grid: {} configurations, {compared} compared on 2 ranks and priced, {ran_gathered} with the convolution gathered",
        cases.len()
    );
}
