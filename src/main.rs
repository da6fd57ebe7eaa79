//! The `owt` command-line tool.

// Burn allocates and frees large activation buffers at every op; mimalloc reuses them instead
// of returning them to the OS, which makes CPU training about a quarter faster.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Whether a panic was `println!` failing to write (not a bug: exit status 1).
static PRINT_FAILED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Looks at standard output before Rust's runtime starts (glibc runs `.init_array` first):
/// the runtime puts `/dev/null` on a closed descriptor, after which `owt plan >&-` could not
/// tell that its output went nowhere.
#[cfg(target_os = "linux")]
#[used]
#[link_section = ".init_array"]
static LOOK_AT_STDOUT: extern "C" fn() = {
    extern "C" fn look() {
        // SAFETY: F_GETFD only reads the descriptor's flags; -1 means it is not open.
        if unsafe { libc::fcntl(1, libc::F_GETFD) } == -1 {
            owt::console::note_stdout_closed_at_start();
        }
    }
    look
};

fn main() {
    // An unexpected panic still ends in one line, not a backtrace, and names its cause rather
    // than a GPU worker's hung-up channel.
    std::panic::set_hook(Box::new(|info| {
        let text = owt::panics::payload_text(info.payload());
        if owt::console::is_print_failure(&text) {
            // A command's output could not be written (a full disk under stdout): said as such.
            PRINT_FAILED.store(true, std::sync::atomic::Ordering::Relaxed);
            owt::err_line!("error: {}{text}", owt::processes::prefix());
            return;
        }
        let msg = owt::panics::clean(&text);
        let at = info.location().map(|l| format!(" (at {}:{})", l.file(), l.line())).unwrap_or_default();
        owt::err_line!(
            "error: {}internal: {}{at}",
            owt::processes::prefix(),
            msg.as_deref().unwrap_or(owt::panics::NO_CAUSE)
        );
    }));
    // Ctrl-C, SIGTERM or SIGHUP mid-write removes the write's temporary and the lock.
    owt::removed_on_signal::install();
    // Parsed, then held to the flags its mode uses (owt::cli::flag_modes): both refusals alike.
    // A dumb terminal gets no colour even where clap would add it (anstream colours any
    // terminal under `CI`, `TERM=dumb` or not).
    let mut command = <owt::cli::Cli as clap::CommandFactory>::command();
    if !owt::train::progress::takes_control_sequences(std::env::var_os("TERM").as_deref()) {
        command = command.color(clap::ColorChoice::Never);
    }
    let parsed = command.try_get_matches().and_then(|matches| {
        let cli = <owt::cli::Cli as clap::FromArgMatches>::from_arg_matches(&matches)?;
        owt::cli::flag_modes::check(&cli, &matches)?;
        Ok(cli)
    });
    let cli = match parsed {
        Ok(cli) => cli,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(
                e.kind(),
                ErrorKind::DisplayHelp
                    | ErrorKind::DisplayVersion
                    | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            ) {
                let _ = e.print();
            } else {
                owt::err_line!("{}", owt::host::parse_error::one_line(&e.render().to_string()));
            }
            owt::exit::now(e.exit_code());
        }
    };
    let outcome = std::panic::catch_unwind(|| {
        owt::exit::inject_fault();
        owt::cli::run(cli)
    });
    let code = match outcome {
        Ok(Ok(())) => {
            // Every process of an MPI job ends MPI together; a failed one leaves without, so
            // the launcher ends the whole job instead of the others waiting for it.
            owt::processes::finish();
            0
        }
        Ok(Err(e)) => {
            owt::err_line!("error: {}{e}", owt::processes::prefix());
            1
        }
        // The hook has said why: the output could not be written, or a bug.
        Err(_) if PRINT_FAILED.load(std::sync::atomic::Ordering::Relaxed) => 1,
        Err(_) => 101,
    };
    owt::exit::now(code)
}
