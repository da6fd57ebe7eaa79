//! owt-meta's integration tests, in one test binary: each module is one
//! former test file, so the crate's generic code is compiled and linked once for all of them.

mod autodiff;
mod conv_pool_props;
mod cost_log;
mod device;
mod parity;
mod speed;
