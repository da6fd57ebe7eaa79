//! Composing models with `Hybrid<B>`: putting a model's parameters where a plan says.

pub mod placer;

pub use placer::{parameter_paths, parameter_values, place_parameters};
