//! A command line owt cannot parse is refused in one line, as every other refusal is: clap's
//! own message (which value, which flag, what it expected) without the usage block and the
//! "try --help" that follow it, so a script or a log reads one line per failure.

/// clap's rendered error `text` as one line: its message lines up to the usage block, joined.
pub fn one_line(text: &str) -> String {
    let words: Vec<&str> = text
        .lines()
        .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    words.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Args {
        #[arg(long)]
        epochs: usize,
        #[arg(long)]
        model: String,
    }

    fn refused(args: &[&str]) -> String {
        let e = Args::try_parse_from(args).unwrap_err();
        one_line(&e.render().to_string())
    }

    #[test]
    fn every_parse_error_is_one_line_that_keeps_what_clap_said() {
        let bad = refused(&["owt", "--epochs=-1", "--model", "m"]);
        assert_eq!(bad, "error: invalid value '-1' for '--epochs <EPOCHS>': invalid digit found in string");
        // A message over several lines (the missing flags are listed below it) keeps them all.
        let missing = refused(&["owt"]);
        assert!(missing.starts_with("error: the following required arguments were not provided:"), "{missing}");
        assert!(missing.contains("--epochs <EPOCHS>") && missing.contains("--model <MODEL>"), "{missing}");
        // A tip stays; the usage block and the pointer to --help go.
        let flag = refused(&["owt", "--epochs", "1", "--model", "m", "-1"]);
        assert!(flag.starts_with("error: unexpected argument '-1' found"), "{flag}");
        for line in [bad, missing, flag] {
            assert!(!line.contains('\n') && !line.contains("Usage") && !line.contains("--help"), "{line}");
        }
    }
}
