//! T13, stale waiter: the server that answers at the address must be the one xray
//! started. Before the start nothing may answer there (a server left from an earlier run
//! would be measured instead); after it, the socket that listens on the port must belong
//! to the started server's process tree. The facts (what answers, which process owns the
//! socket) are read by the caller from the machine; the verdicts are here.

use crate::judging::status::{CheckResult, Status, Tripwire};

/// T13 before the start: something already answers at `base`, so nothing may be started.
pub fn address_taken(base: &str) -> CheckResult {
    CheckResult::new(
        Tripwire::T13,
        Status::Fail,
        format!(
            "something already answers at {base}: a server left from an earlier run would be measured instead of the one xray starts; stop it first (inferlint teardown), or give --url to check it as it is"
        ),
    )
}

/// T13 when xray started no server (`--url` without `--serve`): nothing to compare.
pub fn not_started(base: &str) -> CheckResult {
    CheckResult::new(
        Tripwire::T13,
        Status::NotApplicable,
        format!(
            "xray did not start the server at {base} (--url without --serve), so there is no started server to compare it with"
        ),
    )
}

/// Who owns the socket that listens on the server's port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listener {
    /// A process of the started server's tree, by pid.
    Ours(u32),
    /// Some other process.
    Other,
    /// No socket listens on the port on this machine.
    Nobody,
    /// The socket table (`/proc/net/tcp`) cannot be read.
    Unreadable,
}

/// T13 after the start: the server at `base` (port `port`) against the process xray
/// started (`started`).
pub fn after_start(base: &str, started: u32, port: u16, listener: Listener) -> CheckResult {
    match listener {
        Listener::Ours(owner) => CheckResult::new(
            Tripwire::T13,
            Status::Pass,
            format!("the server at {base} is the one xray started (pid {owner})"),
        )
        .with("pid", owner)
        .with("port", port),
        Listener::Other => CheckResult::new(
            Tripwire::T13,
            Status::Fail,
            format!(
                "the server at {base} is not the one xray started (pid {started}): another process holds port {port}"
            ),
        )
        .with("port", port),
        Listener::Nobody => cannot_tell(
            base,
            &format!("no socket listens on port {port} on this machine"),
        ),
        Listener::Unreadable => CheckResult::new(
            Tripwire::T13,
            Status::Unknown,
            "cannot tell which process serves the address: /proc/net/tcp cannot be read",
        ),
    }
}

/// T13 Can't tell: which process serves `base` cannot be found out, and `why`.
pub fn cannot_tell(base: &str, why: &str) -> CheckResult {
    CheckResult::new(
        Tripwire::T13,
        Status::Unknown,
        format!("cannot tell which process serves {base}: {why}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only the started server's own socket passes; another owner fails; no owner found
    /// is Can't tell, never a pass.
    #[test]
    fn only_the_started_servers_socket_passes() {
        let base = "http://127.0.0.1:8000";
        let ours = after_start(base, 100, 8000, Listener::Ours(123));
        assert_eq!(ours.status, Status::Pass);
        assert_eq!(ours.evidence_as::<u32>("pid"), Some(123));
        let other = after_start(base, 100, 8000, Listener::Other);
        assert_eq!(other.status, Status::Fail);
        assert!(other.message.contains("(pid 100)"), "{}", other.message);
        for unknown in [Listener::Nobody, Listener::Unreadable] {
            assert_eq!(
                after_start(base, 100, 8000, unknown).status,
                Status::Unknown
            );
        }
        assert_eq!(address_taken(base).status, Status::Fail);
        assert_eq!(not_started(base).status, Status::NotApplicable);
        assert_eq!(
            cannot_tell(base, "that needs Linux's /proc").message,
            "cannot tell which process serves http://127.0.0.1:8000: that needs Linux's /proc"
        );
    }
}
