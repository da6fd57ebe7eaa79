//! The resizer's filter (owt-pixels) that a model's spec names (owt-models).

use owt_models::ResizeFilter;

/// The resizer's filter a model spec's [`ResizeFilter`] names.
pub fn filter_of(filter: ResizeFilter) -> owt_pixels::Filter {
    match filter {
        ResizeFilter::Area => owt_pixels::Filter::Area,
        ResizeFilter::Bilinear => owt_pixels::Filter::Bilinear,
    }
}
