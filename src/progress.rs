//! Progress of the device phase for `cargo mcpp`: an indicatif bar with one tick per action
//! and the current file when stderr is a terminal, plain lines otherwise. build.rs never
//! shows progress (cargo captures its output).

use crate::graph::{Action, Observer};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Progress on stderr.
pub struct Progress {
    bar: Option<ProgressBar>,
    total: AtomicUsize,
    done: AtomicUsize,
    package: String,
}

impl Progress {
    /// A progress reporter for `package`; a bar on a terminal, plain lines otherwise.
    pub fn new(package: &str) -> Progress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template("{prefix:>12.cyan.bold} [{bar:25}] {pos}/{len} {wide_msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> "),
            );
            bar.set_prefix("Device");
            bar
        });
        Progress { bar, total: AtomicUsize::new(0), done: AtomicUsize::new(0), package: package.to_string() }
    }
    /// Remove the bar.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

impl Observer for Progress {
    fn planned(&self, total: usize) {
        self.total.store(total, Ordering::SeqCst);
        match &self.bar {
            Some(bar) => bar.set_length(total as u64),
            None if total > 0 => eprintln!("      Device {} ({total} action(s) to run)", self.package),
            None => {}
        }
    }
    fn started(&self, action: &Action) {
        match &self.bar {
            Some(bar) => bar.set_message(action.description.clone()),
            None => eprintln!("   Compiling {}", action.description),
        }
    }
    fn finished(&self, _action: &Action) {
        self.done.fetch_add(1, Ordering::SeqCst);
        if let Some(bar) = &self.bar {
            bar.inc(1);
        }
    }
}
