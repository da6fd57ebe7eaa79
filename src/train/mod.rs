//! Training and evaluation, on one device or on a mesh of ranks under a parallel plan.

pub mod atomic;
pub mod budget;
pub mod checkpoint;
pub mod config;
pub mod dataset_identity;
pub mod input;
pub mod metrics;
pub mod momentum;
pub mod prefetch;
pub mod progress;
pub mod record_shapes;
pub mod run_dir;
pub mod schedule;
pub mod step;
pub mod ten_crop;
pub mod trainer;
pub mod writer_lock;

pub use checkpoint::{Checkpoint, CheckpointState, CHECKPOINT_FILE};
pub use config::TrainConfig;
pub use dataset_identity::DatasetIdentity;
pub use input::{batch_tensors, upload_batch, upload_eval};
pub use metrics::{Communication, EpochMetrics, TrafficPerStep, METRICS_FILE};
pub use schedule::{LrScaling, LrSchedule};
pub use step::{classifier, correct_count, features, train_step, FcUpdate, StepOutcome};
pub use trainer::{evaluate, evaluate_with, load_model, predictions, sgd, train, Evaluation, RunOptions};
