pub mod reader;
pub mod store;
