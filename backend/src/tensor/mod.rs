//! The distributed tensor and what it is made of: a global shape, a placement along each mesh
//! dimension (`placement`), one inner tensor per rank (`dtensor`) of any kind (`kind`: float,
//! int, bool behind one interface), the public face of placements on Burn tensors
//! (`distributed`), and tensors made straight from host data in a placement (`upload`).

pub(crate) mod distributed;
pub(crate) mod dtensor;
pub(crate) mod kind;
pub(crate) mod placement;
pub(crate) mod upload;
