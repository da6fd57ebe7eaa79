//! The one error type of the `owt` tool: a category and a one-line message naming what was
//! expected and what was given.

/// Why a command could not do what was asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OwtError {
    /// Bad arguments or a model/data mismatch.
    Input(String),
    /// A dataset is missing, unreadable or malformed.
    Data(String),
    /// The requested backend is not compiled in or has no device.
    Backend(String),
    /// A checkpoint is missing, unreadable or for another model.
    Checkpoint(String),
    /// Writing results failed.
    Io(String),
}

impl OwtError {
    /// An input error.
    pub fn input(msg: impl Into<String>) -> Self {
        OwtError::Input(msg.into())
    }
    /// A data error.
    pub fn data(msg: impl Into<String>) -> Self {
        OwtError::Data(msg.into())
    }
    /// A backend error.
    pub fn backend(msg: impl Into<String>) -> Self {
        OwtError::Backend(msg.into())
    }
    /// A checkpoint error.
    pub fn checkpoint(msg: impl Into<String>) -> Self {
        OwtError::Checkpoint(msg.into())
    }
    /// An I/O error.
    pub fn io(msg: impl Into<String>) -> Self {
        OwtError::Io(msg.into())
    }
}

impl std::fmt::Display for OwtError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (kind, msg) = match self {
            OwtError::Input(m) => ("invalid input", m),
            OwtError::Data(m) => ("data", m),
            OwtError::Backend(m) => ("backend", m),
            OwtError::Checkpoint(m) => ("checkpoint", m),
            OwtError::Io(m) => ("io", m),
        };
        write!(f, "{kind}: {msg}")
    }
}

impl std::error::Error for OwtError {}

impl From<owt_models::ArchitectureError> for OwtError {
    fn from(e: owt_models::ArchitectureError) -> Self {
        OwtError::Input(e.0)
    }
}

impl From<owt_hybrid::PlanError> for OwtError {
    fn from(e: owt_hybrid::PlanError) -> Self {
        OwtError::Input(e.0)
    }
}
