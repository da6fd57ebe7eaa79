use crate::TensorSnapshot;

mod alignment;
mod edge_cases;
mod header;
mod helpers;
mod reader;
mod round_trip;
mod store;
mod writer;
mod zero_copy;
