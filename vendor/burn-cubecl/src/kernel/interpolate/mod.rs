mod base;
mod bicubic;
mod bilinear;
mod lanczos3;
mod nearest;
mod nearest_backward;

pub use base::*;
