//! The internal modes' command line, and finding the program to run as `execvp` would.

use std::ffi::{OsStr, OsString};
use std::io;
use std::path::{Path, PathBuf};

use inferlint_gpu::tree::StopTimes;

use super::millis;

/// The options both internal modes take: `--parent PID [--cgroup DIR] [--grace-ms N]
/// [--kill-ms N] [--arg0 WORD] [--env K=V]... -- PROGRAM [ARGS...]`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct InternalArgs {
    /// The process that started this one: if another is our parent, it has died.
    pub(super) parent: u32,
    pub(super) cgroup: Option<PathBuf>,
    pub(super) grace_ms: u64,
    pub(super) kill_ms: u64,
    /// The program's name as the user wrote it (argv[0]); `program` is its path.
    pub(super) arg0: Option<OsString>,
    pub(super) env: Vec<(OsString, OsString)>,
    pub(super) program: OsString,
    pub(super) args: Vec<OsString>,
    /// The load's supervisor (`--load`): the program's stdout and stderr are the
    /// supervisor's own, nothing is reported, and the supervisor exits with the
    /// program's code once what the program left running is stopped.
    pub(super) load: bool,
}

impl InternalArgs {
    pub(super) fn parse(words: &[OsString]) -> Result<InternalArgs, String> {
        let mut parsed = InternalArgs::default();
        let mut i = 0;
        let value = |i: usize| {
            words
                .get(i + 1)
                .cloned()
                .ok_or_else(|| format!("{} needs a value", words[i].to_string_lossy()))
        };
        let number = |i: usize| -> Result<u64, String> {
            value(i)?
                .to_str()
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| format!("{} needs a number", words[i].to_string_lossy()))
        };
        while let Some(word) = words.get(i) {
            match word.to_str() {
                Some("--") => {
                    let mut rest = words[i + 1..].iter().cloned();
                    parsed.program = rest.next().ok_or("no program after --")?;
                    parsed.args = rest.collect();
                    if parsed.parent == 0 {
                        return Err("no --parent".to_owned());
                    }
                    return Ok(parsed);
                }
                Some("--parent") => {
                    parsed.parent = u32::try_from(number(i)?).map_err(|e| e.to_string())?
                }
                Some("--cgroup") => parsed.cgroup = Some(PathBuf::from(value(i)?)),
                Some("--grace-ms") => parsed.grace_ms = number(i)?,
                Some("--kill-ms") => parsed.kill_ms = number(i)?,
                Some("--arg0") => parsed.arg0 = Some(value(i)?),
                Some("--load") => {
                    parsed.load = true;
                    i += 1;
                    continue;
                }
                Some("--env") => {
                    let pair = value(i)?;
                    parsed
                        .env
                        .push(split_assignment(&pair).ok_or("--env needs K=V")?);
                }
                _ => return Err(format!("unknown option {}", word.to_string_lossy())),
            }
            i += 2;
        }
        Err("no -- before the program".to_owned())
    }

    /// The words that pass these options on, up to and including the program's.
    /// The options for supervising `program` (as the user wrote it; found at `path`)
    /// with `args` and the variables `env` sets, this process its parent, stopped with
    /// `times`: neither a cgroup nor the load's mode.
    pub(super) fn supervising(
        program: &str,
        path: PathBuf,
        args: &[String],
        env: &[(String, String)],
        times: StopTimes,
    ) -> InternalArgs {
        InternalArgs {
            parent: std::process::id(),
            cgroup: None,
            grace_ms: millis(times.grace),
            kill_ms: millis(times.kill_wait),
            arg0: Some(program.into()),
            env: env
                .iter()
                .map(|(k, v)| (OsString::from(k), OsString::from(v)))
                .collect(),
            program: path.into_os_string(),
            args: args.iter().map(OsString::from).collect(),
            load: false,
        }
    }

    pub(super) fn to_words(&self) -> Vec<OsString> {
        let mut words: Vec<OsString> = vec!["--parent".into(), self.parent.to_string().into()];
        if let Some(dir) = &self.cgroup {
            words.extend(["--cgroup".into(), dir.clone().into_os_string()]);
        }
        if self.grace_ms > 0 || self.kill_ms > 0 {
            words.extend([
                "--grace-ms".into(),
                self.grace_ms.to_string().into(),
                "--kill-ms".into(),
                self.kill_ms.to_string().into(),
            ]);
        }
        if let Some(arg0) = &self.arg0 {
            words.extend(["--arg0".into(), arg0.clone()]);
        }
        if self.load {
            words.push("--load".into());
        }
        for (key, value) in &self.env {
            let mut pair = key.clone();
            pair.push("=");
            pair.push(value);
            words.extend(["--env".into(), pair]);
        }
        words.push("--".into());
        words.push(self.program.clone());
        words.extend(self.args.iter().cloned());
        words
    }
}

/// `KEY=VALUE` split at the first `=`.
fn split_assignment(pair: &OsStr) -> Option<(OsString, OsString)> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let bytes = pair.as_bytes();
        let at = bytes.iter().position(|&b| b == b'=')?;
        Some((
            OsStr::from_bytes(&bytes[..at]).to_owned(),
            OsStr::from_bytes(&bytes[at + 1..]).to_owned(),
        ))
    }
    #[cfg(not(unix))]
    {
        let text = pair.to_str()?;
        let (key, value) = text.split_once('=')?;
        Some((key.into(), value.into()))
    }
}

/// Where `program` is, searched as `execvp` would (the `PATH` the child will have, when
/// the command sets one), so that a missing program fails here, with the same error a
/// plain spawn gives, and not later inside the trampoline.
pub fn find_program(program: &str, path_override: Option<&str>) -> io::Result<PathBuf> {
    let not_found = || io::Error::from_raw_os_error(2);
    if program.is_empty() {
        return Err(not_found());
    }
    if program.contains('/') {
        let path = PathBuf::from(program);
        return if path.exists() {
            Ok(path)
        } else {
            Err(not_found())
        };
    }
    let search = match path_override {
        Some(path) => OsString::from(path),
        None => std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into()),
    };
    std::env::split_paths(&search)
        .map(|dir| dir.join(program))
        .find(|candidate| is_executable(candidate))
        .ok_or_else(not_found)
}

fn is_executable(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        path.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        path.is_file()
    }
}

/// The `PATH` an env list sets, if it sets one.
pub(super) fn path_in(env: &[(String, String)]) -> Option<&str> {
    env.iter()
        .rev()
        .find(|(key, _)| key == "PATH")
        .map(|(_, value)| value.as_str())
}

/// Starts `command` from a thread that lives as long as this process, so that a child's
#[cfg(test)]
mod tests {
    use super::*;
    use crate::supervise::internal;

    #[test]
    fn internal_options_read_back_as_written() {
        let options = InternalArgs {
            parent: 42,
            cgroup: Some("/sys/fs/cgroup/x y".into()),
            grace_ms: 30_000,
            kill_ms: 10_000,
            arg0: Some("vllm".into()),
            env: vec![("A".into(), "1=2".into()), ("EMPTY".into(), "".into())],
            program: "/usr/bin/vllm".into(),
            args: vec!["serve".into(), "--".into(), "--env".into()],
            load: false,
        };
        assert_eq!(
            InternalArgs::parse(&options.to_words()),
            Ok(options.clone())
        );
        let load = InternalArgs {
            load: true,
            ..options
        };
        assert_eq!(InternalArgs::parse(&load.to_words()), Ok(load));
    }

    #[test]
    fn internal_options_without_a_program_or_a_parent_are_refused() {
        let words = |w: &[&str]| w.iter().map(OsString::from).collect::<Vec<_>>();
        assert!(InternalArgs::parse(&words(&["--parent", "1"])).is_err());
        assert!(InternalArgs::parse(&words(&["--", "x"])).is_err());
        assert!(InternalArgs::parse(&words(&["--parent", "x", "--", "x"])).is_err());
        assert!(InternalArgs::parse(&words(&["--env", "novalue", "--", "x"])).is_err());
    }

    #[test]
    fn other_command_lines_are_not_internal() {
        let args: Vec<OsString> = ["inferlint", "report", "run"].map(OsString::from).to_vec();
        assert_eq!(internal(&args), None);
        assert_eq!(internal(&[OsString::from("inferlint")]), None);
    }

    #[cfg(unix)]
    #[test]
    fn a_program_is_found_on_the_path_the_child_will_have() {
        assert!(find_program("sh", None).is_ok_and(|p| p.is_absolute()));
        let missing = find_program("inferlint-no-such-program", None).unwrap_err();
        assert_eq!(missing.kind(), io::ErrorKind::NotFound);
        // The command's own PATH decides, as it would for the child.
        let dir = std::env::temp_dir();
        assert!(find_program("sh", Some(dir.to_str().unwrap_or("/nonexistent"))).is_err());
        assert!(find_program("/bin/sh", Some("")).is_ok());
        assert!(find_program("/no/such/program", None).is_err());
        assert!(find_program("", None).is_err());
    }
}
