//! The folder a run is written into (`xray -o DIR`): new or empty, so that one folder
//! never holds two runs. A boot log, before/after snapshots or a result file left by an
//! earlier run would otherwise be read as this run's (an old `bench.json` checked against
//! this run's counters fails T15 on a mix of two runs).

use std::fs;
use std::path::{Path, PathBuf};

use inferlint_engines::output::{same_file, Rule};

use crate::exit::CliError;

/// The file inferlint writes into every folder it makes (`demo`, `xray -o`, a fleet's
/// `watch -o` and `report --prometheus --save`): one
/// line naming the command and the version. It alone says a folder is an earlier
/// output of ours; what the other files hold never does (a real run recorded from the
/// simulated server has the same boot log as a demo).
pub const MARKER: &str = ".inferlint";

/// The marker's text for `command`.
fn marker_text(command: &str) -> String {
    format!("inferlint {command} {}\n", env!("CARGO_PKG_VERSION"))
}

/// Writes the marker of `command` into `dir`, under the writer's rule.
pub fn mark(dir: &Path, command: &str, rule: &Rule) -> Result<(), CliError> {
    inferlint_engines::output::write_file(&dir.join(MARKER), marker_text(command).as_bytes(), rule)
        .map_err(CliError::from)
}

/// Whether `dir` holds the marker `command` writes: a regular file (a link, a pipe or a
/// device is no marker), its first line `inferlint COMMAND VERSION`, of any version.
pub fn marked_by(dir: &Path, command: &str) -> bool {
    use std::io::Read;
    let path = dir.join(MARKER);
    if !fs::symlink_metadata(&path).is_ok_and(|m| m.is_file()) {
        return false;
    }
    let Ok((file, _)) = inferlint_engines::files::open_input(&path) else {
        return false;
    };
    let mut head = Vec::new();
    if file.take(256).read_to_end(&mut head).is_err() {
        return false;
    }
    let text = String::from_utf8_lossy(&head);
    let mut words = text.lines().next().unwrap_or_default().split(' ');
    words.next() == Some("inferlint") && words.next() == Some(command) && words.next().is_some()
}

/// Refuses an output folder given as a symbolic link, for every command that writes a
/// folder (`xray -o`, `watch URL URL … -o`, `report --prometheus --save`), as `demo -o`
/// refuses one: the folder a link points to may be anything, and is never written
/// through, `--force` or not (a refused output target: exit 64). A trailing `/` does not
/// hide the link (`lstat("link/")` follows it). A link above the folder (`-o
/// runs/today`, `runs` a link to another disk) is how folders are often laid out, so it
/// is named on stderr with where the folder really is, not refused.
pub fn refuse_link(dir: &Path, command: &str, flag: &str) -> Result<(), CliError> {
    let is_link = |p: &Path| fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink());
    // `components` drops a trailing `/` and inner `.`, so the last one is the name itself.
    let plain: PathBuf = dir.components().collect();
    if is_link(&plain) {
        return Err(CliError::usage(format!(
            "{} is a symbolic link; {command} never writes a folder through one, --force or not: give a folder with {flag}",
            dir.display()
        )));
    }
    let mut above = PathBuf::new();
    for part in plain.parent().map(Path::components).into_iter().flatten() {
        above.push(part);
        if is_link(&above) {
            let real = fs::canonicalize(&above).map_or_else(
                |_| "where it leads".to_owned(),
                |r| {
                    r.join(plain.strip_prefix(&above).unwrap_or(&plain))
                        .display()
                        .to_string()
                },
            );
            crate::output::eprint_line!(
                "note: {} is a symbolic link: {flag} {} is written into {real}",
                above.display(),
                dir.display()
            );
            break;
        }
    }
    Ok(())
}

/// Makes `dir` ready for a fleet written by `command` (`watch URL URL … -o DIR`,
/// `report --prometheus --save DIR`) and writes the [`MARKER`] into it, before any file
/// of the fleet: a recording stopped half-way is still known as ours. A link is refused
/// ([`refuse_link`]); a missing folder is created; one holding nothing, or only the
/// marker `command` writes, is used. One holding anything else is refused, `--force` or
/// not (a fleet is never mixed with files already there), and the refusal says whether
/// the files are an earlier output of `command` (by its marker) or not inferlint's.
pub fn prepare_fleet(dir: &Path, command: &str, flag: &str) -> Result<(), CliError> {
    refuse_link(dir, command, flag)?;
    let cannot_read =
        |e: std::io::Error| CliError::cannot_write(format!("{flag} {}: {e}", dir.display()));
    match fs::read_dir(dir) {
        Ok(entries) => {
            let ours = marked_by(dir, command);
            let mut others = false;
            for entry in entries {
                let name = entry.map_err(cannot_read)?.file_name();
                others |= !(ours && name == MARKER);
            }
            if others {
                let whose = if ours {
                    format!("of an earlier inferlint {command} (its {MARKER} says so)")
                } else if fs::symlink_metadata(dir.join(MARKER)).is_ok() {
                    format!("of another command (its {MARKER} is not inferlint {command}'s)")
                } else {
                    "that are not inferlint's".to_owned()
                };
                return Err(CliError::usage(format!(
                    "{flag} {}: the folder holds files {whose}; a fleet is written into a new or empty folder",
                    dir.display()
                )));
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => fs::create_dir_all(dir)
            .map_err(|e| CliError::cannot_write(format!("cannot create {}: {e}", dir.display())))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => {
            return Err(CliError::usage(format!(
                "{flag} {} is a file, not a folder; give a folder",
                dir.display()
            )))
        }
        Err(e) => return Err(cannot_read(e)),
    }
    mark(dir, command, &Rule::force(true))
}

/// The start of the name of a folder an earlier run was moved into.
const EARLIER: &str = "earlier-";

/// Makes `dir` ready for a new run and writes the [`MARKER`] into it. A link is refused
/// ([`refuse_link`]); a missing folder is created; an empty one is used (one holding only an earlier xray's marker is empty).
/// One holding other entries is refused, unless `force`, which moves every entry into a
/// new `DIR/earlier-YYYYmmdd-HHMMSS/` (nothing is deleted) and returns that folder;
/// folders an earlier `--force` made stay where they are.
/// Entries that are the run's own named inputs (`keep`: an attached server's boot log, a
/// result file given with `--bench-result`) are neither counted nor moved.
pub fn prepare(dir: &Path, force: bool, keep: &[&Path]) -> Result<Option<PathBuf>, CliError> {
    refuse_link(dir, "xray", "-o")?;
    if dir.exists() && !dir.is_dir() {
        return Err(CliError::usage(format!(
            "{} is a file, not a folder; give a folder with -o",
            dir.display()
        )));
    }
    fs::create_dir_all(dir)
        .map_err(|e| CliError::cannot_write(format!("cannot create {}: {e}", dir.display())))?;
    let cannot_read =
        |e: std::io::Error| CliError::cannot_write(format!("cannot read {}: {e}", dir.display()));
    let mut earlier: Vec<PathBuf> = Vec::new();
    for entry in fs::read_dir(dir).map_err(cannot_read)? {
        let path = entry.map_err(cannot_read)?.path();
        // An earlier run already moved aside is kept beside the new one: a run's files
        // are read from the folder itself, never from its subfolders.
        let moved_aside = path.is_dir()
            && path
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(EARLIER));
        // Our own marker from an earlier xray is written again below, never counted.
        let our_marker = path.file_name().is_some_and(|n| n == MARKER) && marked_by(dir, "xray");
        if !moved_aside && !our_marker && !keep.iter().any(|k| same_file(k, &path)) {
            earlier.push(path);
        }
    }
    if earlier.is_empty() {
        mark(dir, "xray", &Rule::force(true))?;
        return Ok(None);
    }
    if !force {
        return Err(CliError::usage(format!(
            "{} is not empty (an earlier run?); give a new folder with -o, or --force to move its files into {}/earlier-TIME/",
            dir.display(),
            dir.display()
        )));
    }
    let aside = aside_folder(dir)?;
    for path in earlier {
        let Some(name) = path.file_name() else {
            continue;
        };
        fs::rename(&path, aside.join(name)).map_err(|e| {
            CliError::cannot_write(format!(
                "cannot move {} into {}: {e}",
                path.display(),
                aside.display()
            ))
        })?;
    }
    mark(dir, "xray", &Rule::force(true))?;
    Ok(Some(aside))
}

/// `xray-YYYYmmdd-HHMMSS` for seconds since 1970 (UTC).
pub(crate) fn folder_name(unix_secs: u64) -> String {
    let (year, month, day, hour, minute, second) =
        inferlint_core::model::civil::utc_parts(i64::try_from(unix_secs).unwrap_or(0));
    format!("xray-{year:04}{month:02}{day:02}-{hour:02}{minute:02}{second:02}")
}

/// A new folder `DIR/earlier-YYYYmmdd-HHMMSS` (with `-2`, `-3`… when taken).
fn aside_folder(dir: &Path) -> Result<PathBuf, CliError> {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let stamp = folder_name(secs).replacen("xray-", EARLIER, 1);
    for n in 1..100 {
        let name = if n == 1 {
            stamp.clone()
        } else {
            format!("{stamp}-{n}")
        };
        let path = dir.join(name);
        match fs::create_dir(&path) {
            Ok(()) => return Ok(path),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(CliError::cannot_write(format!(
                    "cannot create {}: {e}",
                    path.display()
                )))
            }
        }
    }
    Err(CliError::cannot_write(format!(
        "cannot create a folder for the earlier run in {}",
        dir.display()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_folder_is_named_by_the_utc_time() {
        assert_eq!(folder_name(0), "xray-19700101-000000");
        assert_eq!(folder_name(1_700_000_000), "xray-20231114-221320");
        assert_eq!(folder_name(951_825_600), "xray-20000229-120000");
    }

    #[test]
    fn an_earlier_run_is_refused_then_moved_aside_whole() {
        let tmp = tempfile::tempdir().expect("a temporary folder");
        let dir = tmp.path().join("run");
        assert_eq!(prepare(&dir, false, &[]).ok(), Some(None), "a new folder");
        fs::write(dir.join("bench.json"), "{}").expect("writes");
        fs::write(dir.join("boot.log"), "mine").expect("writes");
        let boot = dir.join("boot.log");
        let refused = prepare(&dir, false, &[]).expect_err("not empty");
        assert!(refused.message().contains("is not empty"), "{refused}");
        // A folder that holds an earlier run is a refused output target: the command
        // line's to mend (another -o, or --force).
        assert_eq!(refused.code().code(), 64);
        let aside = prepare(&dir, true, &[&boot])
            .expect("moved")
            .expect("a folder for the earlier run");
        assert!(aside.join("bench.json").is_file());
        assert!(marked_by(&dir, "xray") && !marked_by(&dir, "demo"));
        assert!(!dir.join("bench.json").exists());
        assert!(boot.is_file(), "a named input stays where it is");
        // Only the named input left: usable as it is.
        assert_eq!(prepare(&dir, false, &[&boot]).ok(), Some(None));
    }
}
