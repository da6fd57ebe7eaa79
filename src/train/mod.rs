//! Training and evaluation, on one device or on a mesh of ranks under a parallel plan.

pub mod atomic;
pub mod budget;
pub mod checkpoint;
pub mod config;
pub mod dataset_identity;
pub mod evaluate;
pub mod input;
pub mod metrics;
pub mod momentum;
pub mod precision;
pub mod prefetch;
pub mod progress;
pub mod record_shapes;
pub mod run_dir;
pub mod run_sgd;
pub mod schedule;
pub mod step;
pub mod ten_crop;
pub mod trainer;
pub mod writer_lock;

pub use checkpoint::{Checkpoint, CheckpointState, CHECKPOINT_FILE};
pub use config::TrainConfig;
pub use dataset_identity::DatasetIdentity;
pub use evaluate::{evaluate, evaluate_with, predictions, Evaluation, EVAL_BATCH};
pub use input::{batch_tensors, upload_batch, upload_eval};
pub use metrics::{BesidesSteps, Communication, EpochMetrics, TrafficPerStep, TrafficTotal, METRICS_FILE};
pub use run_dir::{prepare as prepare_run_dir, Existing, RunDir};
pub use schedule::{LrScaling, LrSchedule};
pub use step::{
    classifier, correct_count, features, gradient_norms, train_step, AccumulatedStep, FcUpdate, StepOutcome,
};
pub use trainer::{load_model, sgd, train, RunOptions};
