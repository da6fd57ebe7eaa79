//! What a panic says, made fit for a user: a GPU runtime starts each device on a worker
//! thread, and when that worker panics the caller only sees its channel hang up ("RecvError").
//! [`capture`] records the messages of panics on every thread while a closure runs and
//! reports the first that names a cause; [`clean`] drops the `unwrap` wrapping of a message.

use std::any::Any;
use std::sync::{Arc, Mutex};

/// What a caught panic's payload says.
pub fn payload_text(payload: &(dyn Any + Send)) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

/// The first line of a panic message without Rust's `unwrap` wrapping, or `None` when what is
/// left names no cause (a hung-up channel between threads).
pub fn clean(message: &str) -> Option<String> {
    let line = message.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
    let mut text = line;
    for wrapper in ["called `Result::unwrap()` on an `Err` value: ", "called `Option::unwrap()` on a `None` value"] {
        if let Some(rest) = text.strip_prefix(wrapper) {
            text = rest.trim();
        }
    }
    let no_cause = text.is_empty()
        || ["RecvError", "SendError", "RecvTimeoutError", "Disconnected"].iter().any(|w| text.starts_with(w));
    (!no_cause).then(|| text.to_string())
}

/// Said when every panic seen was a hung-up channel.
pub const NO_CAUSE: &str =
    "the runtime's worker thread stopped without saying why (set CUBECL_DEBUG_LOG=stderr for its log)";

/// Runs `f`, catching a panic on this thread; while it runs, panics on any thread are recorded
/// instead of printed. On a panic, the first recorded message that names a cause (or
/// [`NO_CAUSE`]).
pub fn capture<R>(f: impl FnOnce() -> R) -> Result<R, String> {
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let log = seen.clone();
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let text = payload_text(info.payload());
        log.lock().unwrap_or_else(|e| e.into_inner()).push(text);
    }));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    std::panic::set_hook(previous);
    result.map_err(|payload| {
        let mut messages = seen.lock().unwrap_or_else(|e| e.into_inner()).clone();
        messages.push(payload_text(payload.as_ref()));
        messages.iter().find_map(|m| clean(m)).unwrap_or_else(|| NO_CAUSE.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unwrap_wrapping_is_dropped_and_hangups_name_no_cause() {
        assert_eq!(
            clean("called `Result::unwrap()` on an `Err` value: DriverError(CUDA_ERROR_STUB_LIBRARY, \"stub\")\nmore"),
            Some("DriverError(CUDA_ERROR_STUB_LIBRARY, \"stub\")".to_string())
        );
        assert_eq!(clean("called `Result::unwrap()` on an `Err` value: RecvError"), None);
        assert_eq!(clean(""), None);
        assert_eq!(clean("plain"), Some("plain".to_string()));
    }

    #[test]
    fn the_worker_threads_cause_wins_over_the_hung_up_channel() {
        let e = capture(|| {
            let (tx, rx) = std::sync::mpsc::channel::<()>();
            let worker = std::thread::spawn(move || {
                let _tx = tx;
                panic!("called `Result::unwrap()` on an `Err` value: DriverError(CUDA_ERROR_INVALID_DEVICE)");
            });
            let _ = worker.join();
            rx.recv().unwrap();
        })
        .unwrap_err();
        assert_eq!(e, "DriverError(CUDA_ERROR_INVALID_DEVICE)");
        assert_eq!(capture(|| -> u8 { panic!("RecvError") }).unwrap_err(), NO_CAUSE);
        assert_eq!(capture(|| 7).unwrap(), 7);
    }
}
