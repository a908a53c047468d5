//! The load command under a supervisor of its own.

use std::io;
use std::process::{Child, ChildStdin, Stdio};
use std::time::Duration;

use inferlint_gpu::tree::{Member, StopTimes};

#[cfg(not(target_os = "linux"))]
use super::tied;
use super::{find_program, path_in, spawn, this_binary, InternalArgs, SUPERVISE};

/// After the load command's own process exits, what it left running (a detached child,
/// a helper still holding its output) gets this long to end by itself before its
/// supervisor stops it (SIGTERM, the load's grace period, SIGKILL). So xray waits for the
/// load's output at most this plus the load's stop times after the load itself exited.
pub const LOAD_STRAYS_WAIT: Duration = Duration::from_secs(2);

/// The load command under a supervisor of its own, as the server is: a child subreaper
/// every orphan of the load's tree is re-parented to, so that nothing the load starts
/// outlives it (see the module's notes). The supervisor's stdout and stderr are the
/// load's; it exits with the load's exit code (128 + the signal for a killed load) once
/// the load's whole tree is gone.
#[derive(Debug)]
pub struct SupervisedLoad {
    /// The supervisor: its stdout and stderr are the load's output.
    pub child: Child,
    /// Open while xray wants the load to run; closing it stops the load's tree.
    lifeline: Option<ChildStdin>,
    anchor: Option<Member>,
}

impl SupervisedLoad {
    /// Starts `program` under a load supervisor in this process's group (Ctrl-C in the
    /// terminal reaches it), with piped stdout and stderr and `stdin` as the load's
    /// stdin where the platform has no supervisor (on Linux the load's stdin is null).
    /// `times` is the stop of what is left of the load's tree, once it ended or was
    /// asked to.
    #[cfg(target_os = "linux")]
    pub fn start(
        program: &str,
        args: &[String],
        env: &[(String, String)],
        stdin: Stdio,
        times: StopTimes,
    ) -> io::Result<SupervisedLoad> {
        let path = find_program(program, path_in(env))?;
        // Here the supervisor's stdin is its lifeline, and the load's is always null.
        drop(stdin);
        let options = InternalArgs {
            load: true,
            ..InternalArgs::supervising(program, path, args, env, times)
        };
        let mut command = this_binary();
        command
            .arg(SUPERVISE)
            .args(options.to_words())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = spawn(command)?;
        let anchor = inferlint_gpu::procs::read_process(child.id()).map(|p| Member {
            pid: p.pid,
            start_time: p.start_time,
        });
        let lifeline = child.stdin.take();
        Ok(SupervisedLoad {
            child,
            lifeline,
            anchor,
        })
    }

    #[cfg(not(target_os = "linux"))]
    pub fn start(
        program: &str,
        args: &[String],
        env: &[(String, String)],
        stdin: Stdio,
        _times: StopTimes,
    ) -> io::Result<SupervisedLoad> {
        let mut command = tied(program, env)?;
        command
            .args(args)
            .stdin(stdin)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        Ok(SupervisedLoad {
            child: spawn(command)?,
            lifeline: None,
            anchor: None,
        })
    }

    /// The supervisor, every process of the load's tree descends from.
    pub fn anchor(&self) -> Option<Member> {
        self.anchor
    }

    /// Asks the supervisor to stop the load's tree (SIGTERM, grace, SIGKILL) and end.
    pub fn release(&mut self) {
        drop(self.lifeline.take());
    }
}

impl Drop for SupervisedLoad {
    /// On every path: a supervisor whose lifeline closes stops what is left of the tree.
    fn drop(&mut self) {
        self.release();
    }
}
