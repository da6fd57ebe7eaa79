//! Autodiff ops of `Hybrid`'s own: a change of layout whose backward pass is the dual
//! collective (`redistribute`: Megatron's paired mappings, along a mesh's ranks or across its
//! nodes), and the marker that labels each layer's backward traffic (`phase_marker`). And the
//! counter-based dropout kernel on any autodiff backend (`counter_dropout`: its backward pass
//! applies the same mask to the gradient).

pub(crate) mod counter_dropout;
pub(crate) mod phase_marker;
pub(crate) mod redistribute;
