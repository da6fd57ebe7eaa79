//! The `owt` command-line tool.

use clap::Parser;

// Burn allocates and frees large activation buffers at every op; mimalloc reuses them instead
// of returning them to the OS, which makes CPU training about a quarter faster.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    // An unexpected panic still ends in one line, not a backtrace, and names its cause rather
    // than a GPU worker's hung-up channel.
    std::panic::set_hook(Box::new(|info| {
        let msg = owt::panics::clean(&owt::panics::payload_text(info.payload()));
        let at = info.location().map(|l| format!(" (at {}:{})", l.file(), l.line())).unwrap_or_default();
        eprintln!(
            "error: {}internal: {}{at}",
            owt::processes::prefix(),
            msg.as_deref().unwrap_or(owt::panics::NO_CAUSE)
        );
    }));
    let cli = match owt::cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
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
            eprintln!("error: {}{e}", owt::processes::prefix());
            1
        }
        // The hook has said why.
        Err(_) => 101,
    };
    owt::exit::now(code)
}
