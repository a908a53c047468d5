//! Writing output files without losing anything already on disk.
//!
//! Every file inferlint writes for a user (a report, a snapshot, a recording, a run
//! folder's files) goes through here, under four rules:
//! - an existing file is never replaced unless the caller says so (`--force`), or the
//!   caller can tell that the file is its own earlier output (a report inferlint wrote);
//! - a file the command reads is never written over, `--force` or not;
//! - a path that is not a regular file, a folder or a link (a device such as
//!   `/dev/null`, a FIFO, a socket) is never written to or replaced, `--force` or not: it
//!   is refused before anything is opened for writing;
//! - a symbolic link is never followed to write: a replacement renames a new file over
//!   the link itself, and the file it pointed to stays as it was;
//! - a whole file is written to a temporary file beside the target and then put in place
//!   in one step, so a reader sees the old file or the whole new one, and a failed write
//!   leaves nothing half-written.
//!
//! A recording written as it is taken ([`create_stream`]) cannot be put in place at the
//! end, so it is created exclusively instead (`O_EXCL`: a link or a file created at the same
//! moment makes it fail) and locked (`flock`), so that a second recorder aimed at the same
//! file is refused instead of interleaving its lines with the first one's.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Why an output could not be written. The text reads after "inferlint: ".
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// The file exists, and may not be replaced without `--force`.
    #[error("{} exists; give another file, or --force to replace it", .path.display())]
    Exists {
        /// The file.
        path: PathBuf,
    },
    /// A symbolic link, never written through.
    #[error(
        "{} is a symbolic link; give another file, or --force to replace the link (the file it points to is left as it is)",
        .path.display()
    )]
    Link {
        /// The link.
        path: PathBuf,
    },
    /// One of the command's inputs, never written over.
    #[error(
        "{} is {what}, which this command reads; give another output file",
        .path.display()
    )]
    IsInput {
        /// The file.
        path: PathBuf,
        /// The input it is, in a few words.
        what: String,
    },
    /// A device, a FIFO or a socket: never written to nor replaced, `--force` or not.
    #[error(
        "{} is {kind}, not a regular file; give a file (an output never replaces a device, a FIFO or a socket, --force or not)",
        .path.display()
    )]
    NotRegular {
        /// The path.
        path: PathBuf,
        /// What it is, in a few words ("a character device").
        kind: &'static str,
    },
    /// A folder where a file was asked for.
    #[error("{} is a folder; give a file", .path.display())]
    Folder {
        /// The folder.
        path: PathBuf,
    },
    /// A recording another recorder is writing (it holds the lock).
    #[error(
        "{} is being written by another recorder (it holds the file's lock); give another file",
        .path.display()
    )]
    Locked {
        /// The file.
        path: PathBuf,
    },
    /// The write failed.
    #[error("cannot write {}: {source}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: io::Error,
    },
}

impl OutputError {
    fn io(path: &Path, source: io::Error) -> OutputError {
        OutputError::Io {
            path: path.to_owned(),
            source,
        }
    }
}

/// What a writer may do about a file already at its output path.
#[derive(Debug, Clone, Copy)]
pub struct Rule<'a> {
    /// `--force`: replace an existing file (or link) whatever it is.
    pub force: bool,
    /// The files the command reads, each with a few words naming it ("the series",
    /// "a boot log"): never written over.
    pub reads: &'a [(&'a Path, &'a str)],
    /// Whether an existing regular file is this writer's own earlier output, which it may
    /// replace without `--force`.
    pub ours: Option<fn(&Path) -> bool>,
}

impl Rule<'_> {
    /// Refuse any existing file, read nothing.
    pub const NEW: Rule<'static> = Rule {
        force: false,
        reads: &[],
        ours: None,
    };

    /// Refuse any existing file unless `force`.
    pub fn force(force: bool) -> Rule<'static> {
        Rule { force, ..Rule::NEW }
    }
}

/// Whether two paths name the same file (after following links): the same device and
/// inode on Unix, the same canonical path elsewhere.
pub fn same_file(a: &Path, b: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (fs::metadata(a), fs::metadata(b)) {
            (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        match (fs::canonicalize(a), fs::canonicalize(b)) {
            (Ok(x), Ok(y)) => x == y,
            _ => false,
        }
    }
}

/// What is at an output path now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Existing {
    Nothing,
    /// A file (or a link) the rule allows to be replaced.
    Replaceable,
}

/// Checks an output path against a rule, before anything is written.
pub fn check(path: &Path, rule: &Rule) -> Result<(), OutputError> {
    existing(path, rule).map(|_| ())
}

fn existing(path: &Path, rule: &Rule) -> Result<Existing, OutputError> {
    let meta = match fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Existing::Nothing),
        Err(e) => return Err(OutputError::io(path, e)),
    };
    // A device, a FIFO or a socket is refused before anything else is looked at, and
    // before any file is opened: `--force` cannot apply to it.
    if let Some(kind) = special_kind(&meta) {
        return Err(OutputError::NotRegular {
            path: path.to_owned(),
            kind,
        });
    }
    // A recording another recorder is writing is named as such, whatever else holds.
    if meta.is_file() && locked_by_another(path) {
        return Err(OutputError::Locked {
            path: path.to_owned(),
        });
    }
    // An input is never written over, whatever the rule says: a link to it included.
    if let Some((_, what)) = rule.reads.iter().find(|(input, _)| same_file(path, input)) {
        return Err(OutputError::IsInput {
            path: path.to_owned(),
            what: (*what).to_owned(),
        });
    }
    if meta.is_dir() {
        return Err(OutputError::Folder {
            path: path.to_owned(),
        });
    }
    if rule.force {
        return Ok(Existing::Replaceable);
    }
    if meta.file_type().is_symlink() {
        return Err(OutputError::Link {
            path: path.to_owned(),
        });
    }
    if meta.is_file() && rule.ours.is_some_and(|ours| ours(path)) {
        return Ok(Existing::Replaceable);
    }
    Err(OutputError::Exists {
        path: path.to_owned(),
    })
}

/// What a path is when it is neither a regular file, a folder nor a symbolic link.
fn special_kind(meta: &fs::Metadata) -> Option<&'static str> {
    let kind = meta.file_type();
    if kind.is_file() || kind.is_dir() || kind.is_symlink() {
        return None;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return Some("a pipe (FIFO)");
        }
        if kind.is_char_device() {
            return Some("a character device");
        }
        if kind.is_block_device() {
            return Some("a block device");
        }
        if kind.is_socket() {
            return Some("a socket");
        }
    }
    Some("not a regular file")
}

/// Creates the folders above an output file.
fn make_parent(path: &Path) -> Result<(), OutputError> {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => {
            fs::create_dir_all(dir).map_err(|e| OutputError::io(path, e))
        }
        _ => Ok(()),
    }
}

/// A new, empty file beside `path` that nothing else can have opened: created
/// exclusively under a name no other writer uses.
fn temporary_beside(path: &Path) -> Result<(PathBuf, File), OutputError> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let name = path
        .file_name()
        .map_or_else(|| "output".into(), |n| n.to_string_lossy().into_owned());
    let mut last_error = None;
    for _ in 0..16 {
        let unique = COUNTER.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let temporary = path.with_file_name(format!(
            ".{name}.{}.{unique}.{nanos}.tmp",
            std::process::id()
        ));
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temporary)
        {
            Ok(file) => return Ok((temporary, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last_error = Some(e),
            Err(e) => return Err(OutputError::io(path, e)),
        }
    }
    Err(OutputError::io(
        path,
        last_error.unwrap_or_else(|| io::Error::other("no temporary name left")),
    ))
}

/// Puts a finished temporary file at `path`. A replacement is one rename (over a link,
/// the link is replaced, not followed). A new file is linked into place, which fails
/// if something appeared at `path` since the check; where the file system has no hard
/// links, it is renamed after one more check.
fn publish(temporary: &Path, path: &Path, existing: Existing) -> Result<(), OutputError> {
    match existing {
        Existing::Replaceable => fs::rename(temporary, path).map_err(|e| OutputError::io(path, e)),
        Existing::Nothing => match fs::hard_link(temporary, path) {
            Ok(()) => {
                let _ = fs::remove_file(temporary);
                Ok(())
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Err(OutputError::Exists {
                path: path.to_owned(),
            }),
            Err(_) => {
                if fs::symlink_metadata(path).is_ok() {
                    return Err(OutputError::Exists {
                        path: path.to_owned(),
                    });
                }
                fs::rename(temporary, path).map_err(|e| OutputError::io(path, e))
            }
        },
    }
}

/// Writes a whole file under `rule`: to a temporary file beside it, synced, then put in
/// place. Parent folders are created. On any error nothing is left behind and an
/// existing file is as it was.
pub fn write_file(path: &Path, bytes: &[u8], rule: &Rule) -> Result<(), OutputError> {
    stage(path, bytes, rule)?.publish()
}

/// Writes a whole file under `rule` to a temporary file beside `path`, synced, and
/// leaves it there until [`Staged::publish`] puts it in place: a command that writes
/// several files stages each as it is made and publishes them once every one is, so
/// that an error on the way leaves none of them. Dropped unpublished, the temporary file
/// is removed. Parent folders are created.
pub fn stage(path: &Path, bytes: &[u8], rule: &Rule) -> Result<Staged, OutputError> {
    let existing = existing(path, rule)?;
    make_parent(path)?;
    let (temporary, mut file) = temporary_beside(path)?;
    let staged = Staged {
        temporary,
        path: path.to_owned(),
        existing,
        published: false,
    };
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(|e| OutputError::io(path, e))?;
    Ok(staged)
}

/// A whole file written beside its place, not yet put there ([`stage`]).
#[derive(Debug)]
#[must_use = "a staged file is removed unless it is published"]
pub struct Staged {
    temporary: PathBuf,
    path: PathBuf,
    existing: Existing,
    published: bool,
}

impl Staged {
    /// The place the file is to be put.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Puts the file in place, as [`write_file`] does: a new file is linked into place
    /// (refused if one appeared there since it was staged), a replaceable one is renamed
    /// over. On an error the temporary file is removed and the place is as it was.
    pub fn publish(mut self) -> Result<(), OutputError> {
        let result = publish(&self.temporary, &self.path, self.existing);
        self.published = result.is_ok();
        result
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.published {
            let _ = fs::remove_file(&self.temporary);
        }
    }
}

/// A file being written line by line, locked against a second writer for as long as it
/// is open.
#[derive(Debug)]
pub struct StreamFile {
    #[cfg(unix)]
    file: nix::fcntl::Flock<File>,
    #[cfg(not(unix))]
    file: File,
    path: PathBuf,
}

impl StreamFile {
    /// The file being written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Flushes what was written to the disk.
    pub fn sync_all(&self) -> io::Result<()> {
        self.file.sync_all()
    }
}

impl Write for StreamFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        (&*self.file).write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        (&*self.file).flush()
    }
}

/// Takes the file's exclusive lock without waiting.
#[cfg(unix)]
fn lock(file: File, path: &Path) -> Result<nix::fcntl::Flock<File>, OutputError> {
    use nix::errno::Errno;
    use nix::fcntl::{Flock, FlockArg};
    match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
        Ok(locked) => Ok(locked),
        Err((_, Errno::EWOULDBLOCK)) => Err(OutputError::Locked {
            path: path.to_owned(),
        }),
        Err((_, errno)) => Err(OutputError::io(path, io::Error::from(errno))),
    }
}

/// Whether another process holds the lock of the regular file at `path`. A link is not
/// followed, and anything that cannot be opened is not locked.
#[cfg(unix)]
fn locked_by_another(path: &Path) -> bool {
    use std::os::unix::fs::OpenOptionsExt;
    let Ok(file) = OpenOptions::new()
        .read(true)
        .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits() | nix::fcntl::OFlag::O_NONBLOCK.bits())
        .open(path)
    else {
        return false;
    };
    if !file.metadata().is_ok_and(|m| m.is_file()) {
        return false;
    }
    matches!(lock(file, path), Err(OutputError::Locked { .. }))
}

#[cfg(not(unix))]
fn locked_by_another(_path: &Path) -> bool {
    false
}

/// Opens a file to be written line by line, locked for as long as the returned handle
/// lives. Without `force` the file must not exist (it is created exclusively); with
/// `force` an existing one is replaced by a new, empty file put in its place at once, so
/// the path always holds a readable recording. A file another recorder holds is refused
/// either way.
pub fn create_stream(path: &Path, rule: &Rule) -> Result<StreamFile, OutputError> {
    let existing = existing(path, rule)?;
    make_parent(path)?;
    let file = match existing {
        Existing::Nothing => OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|e| match e.kind() {
                io::ErrorKind::AlreadyExists => OutputError::Exists {
                    path: path.to_owned(),
                },
                _ => OutputError::io(path, e),
            })?,
        Existing::Replaceable => {
            let (temporary, file) = temporary_beside(path)?;
            if let Err(e) = fs::rename(&temporary, path) {
                let _ = fs::remove_file(&temporary);
                return Err(OutputError::io(path, e));
            }
            file
        }
    };
    #[cfg(unix)]
    let file = lock(file, path)?;
    Ok(StreamFile {
        file,
        path: path.to_owned(),
    })
}

/// Whether a folder is missing or holds nothing.
pub fn is_empty_folder(dir: &Path) -> bool {
    match fs::read_dir(dir) {
        Ok(mut entries) => entries.next().is_none(),
        Err(e) => e.kind() == io::ErrorKind::NotFound,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `/dev/null` is only looked at here (`check` opens nothing for writing): refused
    /// with `--force` and without, and the refusal never suggests `--force`.
    #[cfg(unix)]
    #[test]
    fn a_device_is_refused_whatever_the_flags() {
        let null = Path::new("/dev/null");
        for rule in [Rule::NEW, Rule::force(true)] {
            let refused = check(null, &rule).expect_err("a device");
            assert!(
                matches!(refused, OutputError::NotRegular { .. }),
                "{refused:?}"
            );
            let text = refused.to_string();
            assert!(text.contains("a character device"), "{text}");
            assert!(!text.contains("or --force"), "{text}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_is_never_replaced() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let fifo = dir.path().join("pipe");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).expect("a FIFO");
        for rule in [Rule::NEW, Rule::force(true)] {
            let refused = write_file(&fifo, b"x", &rule).expect_err("a FIFO");
            assert!(refused.to_string().contains("a pipe (FIFO)"), "{refused}");
            let refused = create_stream(&fifo, &rule).expect_err("a FIFO");
            assert!(matches!(refused, OutputError::NotRegular { .. }));
        }
        let meta = fs::symlink_metadata(&fifo).expect("still there");
        assert!(special_kind(&meta).is_some(), "still a FIFO");
        assert_eq!(
            fs::read_dir(dir.path()).expect("listed").count(),
            1,
            "no temporary file"
        );
    }

    #[test]
    fn a_temporary_name_is_hidden_and_beside_the_target() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let target = dir.path().join("report.html");
        let (temporary, _file) = temporary_beside(&target).expect("created");
        assert_eq!(temporary.parent(), target.parent());
        let name = temporary
            .file_name()
            .expect("a name")
            .to_string_lossy()
            .into_owned();
        assert!(
            name.starts_with(".report.html.") && name.ends_with(".tmp"),
            "{name}"
        );
    }
    /// A staged file is on disk, whole, under a hidden name, and at its place only once
    /// published; one dropped unpublished leaves nothing behind.
    #[test]
    fn a_staged_file_appears_only_when_published() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let listed = || {
            let mut names: Vec<String> = fs::read_dir(dir.path())
                .expect("listed")
                .map(|e| {
                    e.expect("an entry")
                        .file_name()
                        .to_string_lossy()
                        .into_owned()
                })
                .collect();
            names.sort();
            names
        };
        let (a, b) = (dir.path().join("a.html"), dir.path().join("b.html"));
        let staged_a = stage(&a, b"page a", &Rule::NEW).expect("staged");
        let staged_b = stage(&b, b"page b", &Rule::NEW).expect("staged");
        assert_eq!(staged_a.path(), a);
        let hidden = listed();
        assert_eq!(hidden.len(), 2, "{hidden:?}");
        assert!(hidden.iter().all(|n| n.starts_with('.')), "{hidden:?}");
        drop(staged_b);
        staged_a.publish().expect("published");
        assert_eq!(listed(), ["a.html"]);
        assert_eq!(fs::read(&a).expect("read"), b"page a");
    }

    /// A file that appears at a new file's place after it was staged is never replaced:
    /// the publication is refused and nothing of the staged file is left.
    #[test]
    fn a_file_that_appears_after_staging_is_kept() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let path = dir.path().join("report.html");
        let staged = stage(&path, b"ours", &Rule::NEW).expect("staged");
        fs::write(&path, b"theirs").expect("written by another");
        let refused = staged.publish().expect_err("it appeared since");
        assert!(matches!(refused, OutputError::Exists { .. }), "{refused:?}");
        assert_eq!(fs::read(&path).expect("read"), b"theirs");
        assert_eq!(fs::read_dir(dir.path()).expect("listed").count(), 1);
    }
}
