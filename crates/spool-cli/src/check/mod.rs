//! `spool check`: verifies a data directory offline and says whether the
//! engine would start on it.
//!
//! [`verify`] reads the directory (changing nothing, taking no lock);
//! [`render`] turns what it found into the summary and the verdict. A torn
//! tail is only a warning — the engine drops it on start, and it was never
//! acknowledged — while damage to acknowledged data fails the check, naming
//! the file and byte offset.

mod render;
mod verify;

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

/// The long `--help` text of `spool check`.
pub(crate) const ABOUT: &str = "\
Verifies a data directory offline: META, every log segment (header, chain,
each record's frame, CRC and sequence number) and every checkpoint; then, if
nothing is damaged, rebuilds the state in memory as a start would and counts
the tasks of each queue per state. Reads only: changes nothing and takes no
lock, so it is safe next to a running server (whose newest segment may then
show a torn tail: a write in progress).

Exit status: 0 when the directory is healthy (a torn tail, the unacknowledged
end of an interrupted write that the engine drops on start, is reported as a
warning); 1 when acknowledged data is damaged (the file and byte offset are
named) or the directory is missing or not a Spool data directory.";

/// Options of `spool check` (see [`ABOUT`]).
#[derive(Debug, Clone, Args)]
pub(crate) struct CheckArgs {
    /// The data directory to verify.
    #[arg(long, value_name = "DIR", default_value = "./spool-data")]
    pub data: PathBuf,
}

pub(crate) fn run(args: CheckArgs) -> anyhow::Result<()> {
    let dir = &args.data;
    let meta = std::fs::metadata(dir)
        .with_context(|| format!("cannot open data directory {}", dir.display()))?;
    anyhow::ensure!(meta.is_dir(), "{} is not a directory", dir.display());
    let report = verify::verify(dir)?;
    let mut stdout = std::io::stdout().lock();
    render::summary(&report, &mut stdout).context("cannot print the report")?;
    if let Some(warning) = render::verdict(&report)? {
        eprintln!("warning: {warning}");
    }
    Ok(())
}
