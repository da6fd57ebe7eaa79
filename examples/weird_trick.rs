//! The one weird trick with the library API: AlexNetSmall on 4 virtual ranks of the CPU, conv
//! layers data-parallel and FC layers model-parallel (a user-written plan, equal to the
//! built-in `weird-trick`), activities exchanged by scheme b, then the communication of a step
//! as measured and as `owt plan` predicts it.
//! Run: `cargo run --locked --example weird_trick -- [EPOCHS]`. Needs `dataset-fashion-mnist`.

use burn::backend::Flex;
use owt::data::{open_splits, DataRequest, DatasetKind};
use owt::parallel::PlanDryRun;
use owt::train::{prepare_run_dir, train, Existing, RunOptions, TrainConfig};
use owt_hybrid::{Exchange, MeshDevice, MeshLayout, Placement, Plan, PlanRule};
use owt_models::{ModelKind, ModelSpec};

fn main() -> Result<(), owt::OwtError> {
    let epochs = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(1);
    let rule = |pattern: &str, placement| PlanRule { pattern: pattern.into(), placement };
    let plan = Plan {
        name: "my-weird-trick".into(),
        rules: vec![rule("fc*.weight", Placement::Shard(1)), rule("fc*.bias", Placement::Shard(0))],
        default: Placement::Replicate,
        input: Placement::Shard(0),
        ranks: None,
        towers: None,
        batch_stats: Default::default(),
    };
    let config = TrainConfig {
        limit: Some(6400),
        epochs,
        ..TrainConfig::new(ModelSpec::new(ModelKind::AlexNetSmall), DatasetKind::FashionMnist)
    };
    let arch = config.model.architecture()?;
    let splits = open_splits(&DataRequest { limit: config.limit, ..DataRequest::new(config.dataset, arch.input) })?;
    let mesh = MeshDevice::virtual_ranks(Default::default(), 4);
    let layout = MeshLayout::<Flex>::new(mesh, plan.clone(), Exchange::Broadcast);
    let out = std::path::Path::new("runs/example-weird-trick");
    let metrics = train(
        &config,
        &splits,
        &layout,
        &prepare_run_dir(out, Existing::Overwrite, "train")?,
        &RunOptions { verbose: true, ..RunOptions::default() },
    )?;
    let measured = metrics.last().and_then(|m| m.communication.clone()).expect("a mesh run reports traffic");
    let planned = PlanDryRun {
        arch: &arch,
        plan: &plan,
        ranks: 4,
        batch: config.batch,
        scheme: Exchange::Broadcast,
        head: config.head,
        fc_update: config.fc_update,
        wire: config.wire,
    }
    .run()?
    .comm;
    println!(
        "per step: measured {:.0} bytes (epoch average, last batch smaller), planned {} bytes for a full batch",
        measured.bytes_per_step, planned.total_bytes
    );
    Ok(())
}
