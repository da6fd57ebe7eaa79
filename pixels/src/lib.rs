#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

pub mod crop;
pub mod decode;

pub use crop::{luma, Crop};
pub use decode::{
    check_aspect_ratio, check_complete_jpeg, check_resizable, dct_reduction, decode, psnr, recycle, resize,
    resize_shorter_to, shorter_side_size, take_buffer, Decoded, Filter, Rgb, DCT_MARGIN, MAX_ASPECT_RATIO,
    MAX_RESIZED_PIXELS,
};
