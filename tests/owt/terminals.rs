//! owt on a terminal as it is: a redrawn progress line (`ESC[K`) only where the terminal can
//! redraw, none under `TERM=dumb` (Emacs's shell and compilation buffers show it as text), and
//! no colour under `NO_COLOR` or `TERM=dumb`, as cargo and indicatif behave.

use std::io::Read;
use std::os::fd::{FromRawFd, OwnedFd};
use std::process::{Command, Stdio};

/// Runs owt with stdout and stderr on a fresh pseudo-terminal, with `TERM` and `NO_COLOR` as
/// `env` says (absent when not given); returns everything the terminal received.
fn on_a_terminal(args: &[&str], env: &[(&str, &str)]) -> String {
    let (mut master, mut slave) = (0, 0);
    // SAFETY: openpty writes two descriptors into the integers given; the rest may be null.
    let r = unsafe { libc::openpty(&mut master, &mut slave, std::ptr::null_mut(), std::ptr::null(), std::ptr::null()) };
    assert_eq!(r, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: both descriptors were just opened and are owned here alone.
    let (master, slave) = unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_owt"));
    cmd.args(args)
        .current_dir(dir.path())
        .env_remove("TERM")
        .env_remove("NO_COLOR")
        .env_remove("CLICOLOR_FORCE")
        .env_remove("CLICOLOR")
        .env_remove("CI")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::from(slave.try_clone().unwrap()))
        .stderr(Stdio::from(slave));
    let mut child = cmd.spawn().expect("run owt");
    drop(cmd); // its copies of the terminal's end: the reader below sees EIO once owt is gone
    let mut reader = std::fs::File::from(master);
    let mut bytes = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => bytes.extend_from_slice(&buf[..n]),
            Err(_) => break, // EIO: every writer has closed the terminal
        }
    }
    child.wait().unwrap();
    String::from_utf8_lossy(&bytes).into_owned()
}

const TRAIN: [&str; 11] =
    ["train", "--model", "alexnet-small", "--dataset", "synthetic", "--limit", "96", "--batch", "16", "--epochs", "1"];

#[test]
fn the_progress_line_is_redrawn_only_where_the_terminal_can() {
    let xterm = on_a_terminal(&TRAIN, &[("TERM", "xterm-256color")]);
    assert!(xterm.contains("\x1b[K") && xterm.contains("images/s"), "a terminal that redraws: {xterm:?}");
    let dumb = on_a_terminal(&TRAIN, &[("TERM", "dumb")]);
    assert!(dumb.contains("images/s"), "progress still shown: {dumb:?}");
    assert!(!dumb.contains('\x1b'), "no control sequence under TERM=dumb: {dumb:?}");
    // A line per tenth, each whole, as on a pipe: no carriage return redrawing one line.
    assert!(!dumb.replace("\r\n", "\n").contains('\r'), "{dumb:?}");
}

/// Whether `s` holds a colour or style sequence (`ESC[` digits and semicolons, then `m`).
fn has_colour(s: &str) -> bool {
    s.match_indices("\x1b[")
        .any(|(i, _)| s[i + 2..].trim_start_matches(|c: char| c.is_ascii_digit() || c == ';').starts_with('m'))
}

#[test]
fn no_colour_under_no_color_or_a_dumb_terminal() {
    for args in [&["--help"][..], &["train", "--help"][..], &["plan", "--bogus"][..]] {
        let coloured = on_a_terminal(args, &[("TERM", "xterm-256color")]);
        if args[0] != "plan" {
            assert!(has_colour(&coloured), "{args:?}: help is coloured on a colour terminal: {coloured:?}");
        }
        // `CI` set (as on CI machines) makes clap colour any terminal, a dumb one included.
        for env in [
            &[("TERM", "xterm-256color"), ("NO_COLOR", "1")][..],
            &[("TERM", "dumb")][..],
            &[("TERM", "dumb"), ("CI", "true")][..],
        ] {
            let plain = on_a_terminal(args, env);
            assert!(!plain.contains('\x1b'), "{args:?} under {env:?}: {plain:?}");
            assert!(
                plain.contains("Usage") || plain.contains("error: unexpected argument"),
                "{args:?} under {env:?}: {plain:?}"
            );
        }
    }
}
