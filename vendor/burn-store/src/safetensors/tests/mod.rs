mod adapter;
mod direct_access;
mod error_handling;
#[cfg(feature = "std")]
mod file_io;
mod filtering;
mod integration;
mod metadata;
mod mixed_datatypes;
mod multi_layer_verify;
mod pytorch_import;
mod round_trip;
