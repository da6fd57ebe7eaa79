//! Lines for the terminal that can never stop the work. A closed pipe (`owt train ... | head
//! -1`, a `tee` that died) or a full disk under stdout or stderr makes `println!` panic and an
//! `eprintln!` inside a panic abort; a training run would lose the epoch it was about to save.
//! Here a failed write is dropped and noted instead: everything a run prints is also in its
//! checkpoint and `metrics.json`. Commands whose only product is what they print (`owt plan`,
//! `owt info`) end quietly on a closed pipe, as Unix tools do ([`quiet_on_closed_pipe`]).

use std::fmt::Display;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

static STDOUT_FAILED: AtomicBool = AtomicBool::new(false);
static STDOUT_CLOSED_AT_START: AtomicBool = AtomicBool::new(false);
static STDERR_FAILED: AtomicBool = AtomicBool::new(false);

fn write_line(mut to: impl Write, line: impl Display, failed: &AtomicBool) {
    if writeln!(to, "{line}").and_then(|_| to.flush()).is_err() {
        failed.store(true, Ordering::Relaxed);
    }
}

/// Writes `line` to standard output; a failure is noted ([`stdout_failed`]), never fatal.
pub fn out(line: impl Display) {
    write_line(std::io::stdout().lock(), line, &STDOUT_FAILED);
}

/// Writes `line` to standard error; a failure is noted ([`stderr_failed`]), never fatal.
pub fn err(line: impl Display) {
    write_line(std::io::stderr().lock(), line, &STDERR_FAILED);
}

/// Whether a line to standard output was dropped.
pub fn stdout_failed() -> bool {
    STDOUT_FAILED.load(Ordering::Relaxed)
}

/// Whether a line to standard error was dropped.
pub fn stderr_failed() -> bool {
    STDERR_FAILED.load(Ordering::Relaxed)
}

/// Notes that standard output was a closed descriptor when the process started (`owt plan >&-`).
/// Rust's runtime opens `/dev/null` on a closed 0, 1 or 2 before `main`, so every later write
/// would succeed into nothing: the binary looks before that ([`stdout_closed_at_start`]).
pub fn note_stdout_closed_at_start() {
    STDOUT_CLOSED_AT_START.store(true, Ordering::Relaxed);
}

/// Whether standard output was closed when the process started: a command whose only product
/// is what it prints then fails, as coreutils do ("write error: Bad file descriptor").
pub fn stdout_closed_at_start() -> bool {
    STDOUT_CLOSED_AT_START.load(Ordering::Relaxed)
}

/// Lets a closed pipe end this process silently (the default action of SIGPIPE, which Rust
/// programs otherwise ignore): for commands that only print, so `owt plan --json | head` ends
/// as `cat file | head` does, with nothing to say and nothing to lose.
pub fn quiet_on_closed_pipe() {
    // SAFETY: restoring a signal's default disposition has no preconditions.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// [`console::out`](crate::host::console::out) with `format!`'s arguments.
#[macro_export]
macro_rules! out_line {
    ($($arg:tt)*) => { $crate::host::console::out(format_args!($($arg)*)) };
}

/// [`console::err`](crate::host::console::err) with `format!`'s arguments.
#[macro_export]
macro_rules! err_line {
    ($($arg:tt)*) => { $crate::host::console::err(format_args!($($arg)*)) };
}

/// What a panic of `println!` on a stdout that cannot be written says (Rust's own words), so
/// it is told apart from a bug: e.g. "failed printing to stdout: No space left on device".
pub fn is_print_failure(message: &str) -> bool {
    message.starts_with("failed printing to stdout") || message.starts_with("failed printing to stderr")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_write_is_noted_not_fatal() {
        let failed = AtomicBool::new(false);
        write_line(Vec::new(), "fine", &failed);
        assert!(!failed.load(Ordering::Relaxed));
        let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
        write_line(full, "epoch 1", &failed);
        assert!(failed.load(Ordering::Relaxed), "/dev/full refuses every write");
    }

    #[test]
    fn print_failures_are_told_apart() {
        assert!(is_print_failure("failed printing to stdout: No space left on device (os error 28)"));
        assert!(!is_print_failure("index out of bounds"));
    }
}
