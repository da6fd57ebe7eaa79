//! The tool's dealings with the process it runs in: lines for the terminal that never stop
//! the work (`console`), leaving the process (`exit`), panics made fit for a user (`panics`),
//! what is removed when a signal interrupts a write (`removed_on_signal`), reading files
//! owt did not write, bounded (`bounded_read`), an output inside an input refused
//! (`nested_paths`), and a command line it cannot parse refused in one line (`parse_error`).

pub mod bounded_read;
pub mod console;
pub mod exit;
pub mod nested_paths;
pub mod panics;
pub mod parse_error;
pub mod removed_on_signal;
