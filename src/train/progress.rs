//! Progress of a long epoch on stderr: a redrawn line on a terminal that can redraw, a line per
//! tenth otherwise (a pipe, a file, or `TERM=dumb`: Emacs's shell and compilation buffers, which
//! show control sequences as text; cargo and indicatif draw no progress bar there either).

use std::io::{IsTerminal, Write};
use std::time::Instant;

/// Reports how far an epoch has got.
pub struct Progress {
    label: String,
    total: usize,
    start: Instant,
    tty: bool,
    next_tenth: usize,
    enabled: bool,
}

impl Progress {
    /// Starts reporting an epoch of `total` images; `enabled = false` keeps quiet (tests).
    pub fn new(label: String, total: usize, enabled: bool) -> Self {
        let tty = std::io::stderr().is_terminal() && takes_control_sequences(std::env::var_os("TERM").as_deref());
        Self { label, total, start: Instant::now(), tty, next_tenth: 1, enabled }
    }

    /// Records that `done` images are through, with the running loss and accuracy.
    pub fn update(&mut self, done: usize, loss: f64, accuracy: f64) {
        if !self.enabled || self.total == 0 {
            return;
        }
        let rate = done as f64 / self.start.elapsed().as_secs_f64().max(1e-9);
        let line = format!(
            "{} [{done:>6}/{}] loss {loss:.4} acc {:.2}% {rate:.0} images/s",
            self.label,
            self.total,
            100.0 * accuracy
        );
        let mut err = std::io::stderr().lock();
        if self.tty {
            let _ = write!(err, "\r{line}\x1b[K");
            if done >= self.total {
                let _ = writeln!(err);
            }
        } else if done * 10 >= self.next_tenth * self.total {
            self.next_tenth = done * 10 / self.total + 1;
            let _ = writeln!(err, "{line}");
        }
        let _ = err.flush();
    }
}

/// Whether a terminal of type `term` (the `TERM` variable) takes control sequences (`ESC[K`,
/// colour): every one but `dumb`, whatever else the environment says (`CI` included), because
/// a dumb terminal shows them as text.
pub fn takes_control_sequences(term: Option<&std::ffi::OsStr>) -> bool {
    term.is_none_or(|t| t != "dumb")
}
