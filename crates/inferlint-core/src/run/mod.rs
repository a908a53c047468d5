//! A run: the model of what it left ([`model`]) and the whole run checked at once
//! ([`checking`]). Both are named here, so a caller reads `run::Run` and
//! `run::check_run`; code inside this crate imports the part it uses.

pub mod checked;
pub mod checking;
pub mod model;

pub use checked::{check, CheckOptions, Checked};
pub use checking::{
    after_not_taken, boot_checks, check_logs, check_run, check_run_with, check_start,
    nothing_checked, series_checks, without_verdict, Absent,
};
pub use model::{input, not_a_benchmark, Run, RunOptions};
