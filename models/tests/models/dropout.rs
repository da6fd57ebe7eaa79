//! The model's own dropout: each ordinary forward pass draws its masks under the next key of
//! the model's count, the one a keyed pass of the same number draws.

use burn::backend::{Autodiff, Flex};
use burn::module::AutodiffModule;
use burn::prelude::*;
use burn::tensor::Distribution;
use owt_models::{AlexNet, AlexNetSmallConfig, DropoutKey, KeyedDropout};

type B = Autodiff<Flex>;

#[test]
fn the_ordinary_forward_keys_each_pass_by_the_models_own_count() {
    let device = Default::default();
    let model = AlexNetSmallConfig::new().with_dropout(0.5).init::<B>(&device);
    let model = AlexNet { dropout: model.dropout.clone().with_seed(9), ..model };
    let x = Tensor::<B, 4>::random([4, 1, 28, 28], Distribution::Normal(0.0, 1.0), &device);
    let logits = |t: Tensor<B, 2>| t.into_data().to_vec::<f32>().unwrap();
    // Evaluation (no autodiff) draws no mask and leaves the count alone.
    let _ = model.valid().forward(x.clone().inner());
    assert_eq!(model.dropout.passes.next(), 0);
    let first = logits(model.forward(x.clone()));
    let second = logits(model.clone().forward(x.clone()));
    assert_eq!(model.dropout.passes.next(), 2, "a clone counts on the same count");
    for (n, got) in [(0, &first), (1, &second)] {
        let keyed = logits(model.forward_hooked(x.clone(), &mut KeyedDropout(DropoutKey::new(9, n))));
        assert_eq!(got, &keyed, "pass {n} draws the masks of DropoutKey::new(9, {n})");
    }
    assert_ne!(first, second, "two passes draw two masks");
}
