//! One progress bar over the whole experiment, with an ETA; silent when asked or when
//! standard error is not a terminal.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

pub fn bar(total: u64, quiet: bool) -> ProgressBar {
    styled(
        total,
        quiet,
        "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} cases · ETA {eta} · {msg}",
    )
}

/// A bar whose length is the experiment's expected seconds (fio runtime + ramp + an
/// estimate of array setup per case), for targets where cases take minutes.
pub fn timed(total_secs: u64, quiet: bool) -> ProgressBar {
    let pb = styled(
        total_secs,
        quiet,
        "{spinner} [{elapsed_precise}] {bar:30} {percent:>3}% · ETA {eta} · {msg}",
    );
    pb.enable_steady_tick(std::time::Duration::from_millis(500));
    pb
}

fn styled(total: u64, quiet: bool, template: &str) -> ProgressBar {
    let pb = ProgressBar::new(total);
    if quiet {
        pb.set_draw_target(ProgressDrawTarget::hidden());
    }
    pb.set_style(ProgressStyle::with_template(template).expect("valid template"));
    pb
}
