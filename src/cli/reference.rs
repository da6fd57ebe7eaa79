//! The book's command-line reference (`docs/src/reference/cli.md`): every command's `--help`,
//! generated from the parser itself, so a test keeps the page equal to what `owt` prints.

use clap::CommandFactory;

use super::Cli;

/// The reference page: `owt --help`, then each command's `owt COMMAND --help`, as Markdown.
pub fn reference_markdown() -> String {
    let mut root = Cli::command().bin_name("owt");
    root.build();
    let mut page = String::from(
        "# The command line\n\n\
         Every command's `--help`, as `owt` prints it. Generated from the parser\n\
         (`owt::cli::reference::reference_markdown`); a test (`tests/owt/book.rs`) keeps this page\n\
         equal to it: after changing a flag, run the tests with `OWT_WRITE_REFERENCE=1` to rewrite it.\n\n## owt\n\n",
    );
    fenced(&mut page, root.render_long_help().to_string());
    for sub in root.get_subcommands_mut() {
        let name = sub.get_name().to_string();
        page.push_str(&format!("\n## owt {name}\n\n"));
        fenced(&mut page, sub.render_long_help().to_string());
    }
    page
}

/// `text` as a fenced block of plain text, without trailing spaces.
fn fenced(page: &mut String, text: String) {
    page.push_str("```text\n");
    for line in text.trim_end().lines() {
        page.push_str(line.trim_end());
        page.push('\n');
    }
    page.push_str("```\n");
}
