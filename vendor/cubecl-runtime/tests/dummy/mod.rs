mod compute;
mod kernel;
mod server;
mod tune;

pub use compute::*;
pub use kernel::*;
pub use server::*;
pub use tune::*;
