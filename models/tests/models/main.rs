//! owt-models' integration tests, in one test binary: each module is one
//! former test file, so the crate's generic code is compiled and linked once for all of them.

mod batch_norm;
mod dropout;
mod input_transform;
mod lrn_and_heads;
mod profile;
mod torchvision;
mod torchvision_fixture;
mod torchvision_vgg;
mod vgg;
