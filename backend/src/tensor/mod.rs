//! The distributed tensor: a global shape, a placement along each mesh dimension, one inner
//! tensor per rank (`dtensor`) of any kind (`kind`: float, int, bool behind one interface, so
//! collectives are written once).

pub(crate) mod dtensor;
pub(crate) mod kind;
