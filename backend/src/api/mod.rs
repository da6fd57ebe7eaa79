//! What a program calls on Burn's own `Tensor` over `Hybrid`: the public face of placements
//! (`distributed`: distribute, redistribute, placement, differentiable under autodiff) and
//! tensors made straight from host data in a placement (`upload`). Above the backend and its
//! autodiff ops, which they call.

pub(crate) mod distributed;
pub(crate) mod upload;
