//! One progress bar over the whole experiment, with an ETA; silent when asked or when
//! standard error is not a terminal.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

pub fn bar(total: u64, quiet: bool) -> ProgressBar {
    let pb = ProgressBar::new(total);
    if quiet {
        pb.set_draw_target(ProgressDrawTarget::hidden());
    }
    pb.set_style(
        ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} cases · ETA {eta} · {msg}",
        )
        .expect("valid template"),
    );
    pb
}
