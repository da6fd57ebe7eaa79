//! What owt-pixels' test binaries share.

use std::path::PathBuf;

/// The repository's fixture photographs (tests/fixtures/photos), found through
/// `CARGO_MANIFEST_DIR` read when the test runs (cargo sets it for the test process): the path
/// compiled in is that of the checkout that built the binary, and a target dir shared between
/// clones at other paths reuses a binary built in another clone.
pub fn photos() -> PathBuf {
    let manifest: PathBuf =
        std::env::var_os("CARGO_MANIFEST_DIR").map(Into::into).unwrap_or_else(|| env!("CARGO_MANIFEST_DIR").into());
    manifest.join("../tests/fixtures/photos")
}
