//! owt-hybrid's integration tests, in one test binary: each module is one
//! former test file, so the crate's generic code is compiled and linked once for all of them.

mod broadcast_placements;
mod conv_grad;
mod default_mesh;
mod differential;
mod empty_work;
mod equivalence;
mod exchange_order;
mod forwarded_ops;
mod indexed_placements;
mod kept;
mod kinds;
mod lifetimes;
mod matmul_placements;
mod max_pool;
mod meta_mesh;
mod own_layout;
mod placements;
mod processes;
mod properties;
mod redistribute_grad;
mod rule_table;
mod two_dims;
mod two_layouts;
mod wire_precision;
