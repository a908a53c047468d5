//! A cgroup (v2) of its own for a process tree xray starts, where the machine allows one.
//!
//! A cgroup holds every process started inside it, whatever the process does: a daemon
//! that calls `setsid` and forks twice leaves its process group and its parent, never its
//! cgroup. So the cgroup's `cgroup.procs` lists the whole tree, and `cgroup.kill` (Linux
//! 5.14 and later) ends all of it at once, even a tree that forks faster than it can be
//! signalled one PID at a time.
//!
//! Where a cgroup may be made is the machine's decision, not ours:
//! - cgroup v2 must be mounted (`/sys/fs/cgroup`, or `/sys/fs/cgroup/unified` on a hybrid
//!   host); cgroup v1 alone offers no such tree here.
//! - The new cgroup goes under our own (`0::PATH` in `/proc/self/cgroup`), and the kernel
//!   must let us create it there and move a process into it: a read-only cgroupfs (the
//!   default in Docker and Kubernetes without `--privileged`) or a directory owned by
//!   another user (a systemd session scope, for a user) refuses, and xray falls back to a
//!   child subreaper.
//! - Under systemd a process may only create cgroups inside a subtree systemd delegated to
//!   it (`Delegate=yes`, marked with the `trusted.delegate` or `user.delegate` extended
//!   attribute); elsewhere systemd owns the tree, and a cgroup made behind its back may be
//!   moved or removed. So with systemd as init, our cgroup must be the namespace's root
//!   (a container with a cgroup namespace of its own) or delegated.
//!
//! The parsers are pure, so the choice is tested on recorded `/proc` texts; creating,
//! joining, listing, killing and removing exist on Linux only.

use std::path::{Path, PathBuf};

/// The file a process writes its PID (or `0`, itself) into to join a cgroup, and that
/// lists the members.
pub const PROCS_FILE: &str = "cgroup.procs";
/// Writing `1` here kills every process in the cgroup (Linux 5.14 and later).
pub const KILL_FILE: &str = "cgroup.kill";

/// The cgroup v2 path of a process: the `0::PATH` line of `/proc/PID/cgroup`. A process
/// outside its cgroup namespace's root reads `/..`-style paths; those are refused.
pub fn unified_path(proc_cgroup: &str) -> Option<&str> {
    proc_cgroup
        .lines()
        .find_map(|line| line.strip_prefix("0::"))
        .map(str::trim_end)
        .filter(|path| path.starts_with('/') && !path.split('/').any(|part| part == ".."))
}

/// One cgroup2 mount: the path of the hierarchy it shows (relative to our namespace's
/// root) and where it is mounted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cgroup2Mount {
    /// The hierarchy the mount shows, relative to our namespace's root.
    pub root: String,
    /// Where it is mounted.
    pub mount_point: PathBuf,
    /// Whether it is mounted read-only.
    pub read_only: bool,
}

/// The cgroup2 mounts in a `/proc/PID/mountinfo` text. Fields: id, parent, major:minor,
/// root, mount point, mount options, optional fields up to `-`, then the file system
/// type. Paths escape space, tab, newline and backslash as octal (`\040`).
pub fn cgroup2_mounts(mountinfo: &str) -> Vec<Cgroup2Mount> {
    mountinfo
        .lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            if right.split_whitespace().next()? != "cgroup2" {
                return None;
            }
            let fields: Vec<&str> = left.split_whitespace().collect();
            let options = fields.get(5)?;
            Some(Cgroup2Mount {
                root: unescape(fields.get(3)?),
                mount_point: PathBuf::from(unescape(fields.get(4)?)),
                read_only: options.split(',').any(|o| o == "ro"),
            })
        })
        .collect()
}

/// Undoes mountinfo's octal escapes (`\040` is a space).
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|d| bytes[i] == b'\\' && d.iter().all(|b| (b'0'..=b'7').contains(b)));
        match octal {
            Some(d) => {
                let value = d.iter().fold(0u32, |n, b| n * 8 + u32::from(b - b'0'));
                out.push(u8::try_from(value).unwrap_or(b'?'));
                i += 4;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The directory of cgroup `path` in one of the mounts: the mount whose root holds it
/// (the deepest, should several), its mount point joined with the rest of the path.
pub fn cgroup_dir(mounts: &[Cgroup2Mount], path: &str) -> Option<PathBuf> {
    mounts
        .iter()
        .filter_map(|m| {
            let root = m.root.trim_end_matches('/');
            let rest = path.strip_prefix(root)?;
            (rest.is_empty() || rest.starts_with('/')).then_some((root.len(), m, rest))
        })
        .max_by_key(|(depth, _, _)| *depth)
        .map(|(_, m, rest)| m.mount_point.join(rest.trim_start_matches('/')))
}

/// What the machine says about where our cgroup may go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// Our own cgroup's directory: the new cgroup is made inside it.
    pub parent: PathBuf,
}

/// Decides where a cgroup of our own may be made, or why not. `proc_cgroup` and
/// `mountinfo` are our `/proc/self/cgroup` and `/proc/self/mountinfo`; `systemd_booted`
/// says systemd is init (`/run/systemd/system` exists); `delegated` reads the delegation
/// mark of a cgroup directory.
pub fn placement(
    proc_cgroup: &str,
    mountinfo: &str,
    systemd_booted: bool,
    delegated: impl Fn(&Path) -> bool,
) -> Result<Placement, NoCgroup> {
    let mounts = cgroup2_mounts(mountinfo);
    if mounts.is_empty() {
        return Err(NoCgroup::new("no cgroup v2 hierarchy is mounted"));
    }
    let Some(path) = unified_path(proc_cgroup) else {
        return Err(NoCgroup::new(
            "this process has no cgroup v2 path in /proc/self/cgroup",
        ));
    };
    let Some(parent) = cgroup_dir(&mounts, path) else {
        return Err(NoCgroup::new(format!(
            "cgroup {path} is not under a mounted cgroup2 hierarchy"
        )));
    };
    if mounts
        .iter()
        .filter(|m| parent.starts_with(&m.mount_point))
        .all(|m| m.read_only)
    {
        return Err(NoCgroup::new(format!(
            "the cgroup hierarchy at {} is mounted read-only",
            parent.display()
        )));
    }
    let namespace_root = path == "/";
    if systemd_booted && !namespace_root && !delegated(&parent) {
        return Err(NoCgroup::new(format!(
            "systemd manages cgroup {path} and has not delegated it (run xray in a unit with Delegate=yes for a cgroup)"
        )));
    }
    Ok(Placement { parent })
}

/// Why this process may make no cgroup of its own: one line naming the file, the
/// hierarchy or the manager that stands in the way.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{why}")]
pub struct NoCgroup {
    why: String,
}

impl NoCgroup {
    fn new(why: impl Into<String>) -> NoCgroup {
        NoCgroup { why: why.into() }
    }
}

/// A cgroup's PIDs, from the text of its `cgroup.procs`.
pub fn parse_procs(text: &str) -> Vec<u32> {
    text.split_whitespace()
        .filter_map(|pid| pid.parse().ok())
        .filter(|&pid| pid != 0)
        .collect()
}

#[cfg(target_os = "linux")]
mod linux {
    use super::*;
    use std::io;

    /// systemd is init when `/run/systemd/system` exists (sd_booted(3)).
    fn systemd_booted() -> bool {
        Path::new("/run/systemd/system").is_dir()
    }

    /// systemd's mark on a cgroup it delegated: `trusted.delegate` (system manager) or
    /// `user.delegate` (user manager), set to `1`.
    fn delegated(dir: &Path) -> bool {
        ["trusted.delegate", "user.delegate"].iter().any(|name| {
            let mut value = [0u8; 8];
            rustix::fs::getxattr(dir, *name, &mut value[..])
                .is_ok_and(|n| value.get(..n) == Some(b"1".as_slice()))
        })
    }

    /// Where this process may make a cgroup of its own, or why it may not.
    pub fn own_placement() -> Result<Placement, NoCgroup> {
        let read = |path: &str| {
            std::fs::read_to_string(path)
                .map_err(|e| NoCgroup::new(format!("cannot read {path}: {e}")))
        };
        placement(
            &read("/proc/self/cgroup")?,
            &read("/proc/self/mountinfo")?,
            systemd_booted(),
            delegated,
        )
    }

    /// A cgroup this process made (or was handed by the process that made it).
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct OwnCgroup {
        dir: PathBuf,
    }

    impl OwnCgroup {
        /// Makes the cgroup `name` under our own, where the machine allows one.
        pub fn create(name: &str) -> Result<OwnCgroup, NoCgroup> {
            let placement = own_placement()?;
            let dir = placement.parent.join(name);
            std::fs::create_dir(&dir).map_err(|e| {
                NoCgroup::new(format!("cannot create cgroup {}: {e}", dir.display()))
            })?;
            Ok(OwnCgroup { dir })
        }

        /// A cgroup made by another process of ours (the directory is trusted as given).
        pub fn at(dir: PathBuf) -> OwnCgroup {
            OwnCgroup { dir }
        }

        /// The cgroup's directory.
        pub fn dir(&self) -> &Path {
            &self.dir
        }

        /// Moves the calling process into the cgroup (`0` names the writer).
        pub fn join_self(&self) -> io::Result<()> {
            std::fs::write(self.dir.join(PROCS_FILE), "0\n")
        }

        /// The PIDs in the cgroup now.
        pub fn pids(&self) -> io::Result<Vec<u32>> {
            std::fs::read_to_string(self.dir.join(PROCS_FILE)).map(|t| parse_procs(&t))
        }

        /// Kills every process in the cgroup at once. `Ok(false)` where the kernel has no
        /// `cgroup.kill` (before 5.14): the caller signals PID by PID instead.
        pub fn kill_all(&self) -> io::Result<bool> {
            let file = self.dir.join(KILL_FILE);
            if !file.exists() {
                return Ok(false);
            }
            std::fs::write(file, "1\n").map(|()| true)
        }

        /// Removes the empty cgroups beside this one named `PREFIX<pid>-…` whose `pid`
        /// is not alive: left by a run whose supervisor was killed before it could
        /// remove its own. The kernel refuses to remove one that still holds a process.
        pub fn remove_stale_siblings(&self, prefix: &str, alive: impl Fn(u32) -> bool) {
            let Some(parent) = self.dir.parent() else {
                return;
            };
            let Ok(entries) = std::fs::read_dir(parent) else {
                return;
            };
            for entry in entries.flatten() {
                let name = entry.file_name();
                let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(prefix)) else {
                    continue;
                };
                let owner = rest.split('-').next().and_then(|pid| pid.parse().ok());
                if entry.path() != self.dir && owner.is_some_and(|pid| !alive(pid)) {
                    let _ = std::fs::remove_dir(entry.path());
                }
            }
        }

        /// Removes the cgroup; the kernel refuses while a process is still in it.
        pub fn remove(&self) -> io::Result<()> {
            match std::fs::remove_dir(&self.dir) {
                Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
                other => other,
            }
        }
    }
}

#[cfg(target_os = "linux")]
pub use linux::{own_placement, OwnCgroup};

#[cfg(test)]
mod tests {
    use super::*;

    // This machine's view while writing this: a hybrid host, cgroup2 at
    // /sys/fs/cgroup/unified, the process in the hierarchy's root.
    const HYBRID_MOUNTINFO: &str = "\
22 27 0:21 / /proc rw,relatime - proc proc rw
31 23 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
42 31 0:39 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
";
    const HYBRID_CGROUP: &str = "4:memory:/process_api/816b\n1:cpu:/\n0::/\n";

    // A systemd host with cgroup v2 only, a user's login session.
    const UNIFIED_MOUNTINFO: &str = "\
35 24 0:30 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot
";
    const SESSION_CGROUP: &str = "0::/user.slice/user-1000.slice/session-4.scope\n";

    // Docker's default on a cgroup v2 host: a cgroup namespace of its own, mounted
    // read-only.
    const DOCKER_MOUNTINFO: &str = "\
640 631 0:30 / /sys/fs/cgroup ro,nosuid,nodev,noexec,relatime - cgroup2 cgroup ro,nsdelegate
";

    #[test]
    fn the_unified_path_is_the_zero_line() {
        assert_eq!(unified_path(HYBRID_CGROUP), Some("/"));
        assert_eq!(
            unified_path(SESSION_CGROUP),
            Some("/user.slice/user-1000.slice/session-4.scope")
        );
        assert_eq!(unified_path("4:memory:/x\n"), None);
        // Outside the namespace's root: no path we could reach.
        assert_eq!(unified_path("0::/../../system.slice/x\n"), None);
    }

    #[test]
    fn cgroup2_mounts_are_found_by_type_and_unescaped() {
        let mounts = cgroup2_mounts(HYBRID_MOUNTINFO);
        assert_eq!(
            mounts,
            [Cgroup2Mount {
                root: "/".into(),
                mount_point: "/sys/fs/cgroup/unified".into(),
                read_only: false,
            }]
        );
        let odd = "41 31 0:38 /a\\040b /mnt/with\\040space ro,relatime - cgroup2 cgroup2 rw\n";
        let mounts = cgroup2_mounts(odd);
        assert_eq!(mounts[0].root, "/a b");
        assert_eq!(mounts[0].mount_point, Path::new("/mnt/with space"));
        assert!(mounts[0].read_only);
    }

    #[test]
    fn the_cgroup_dir_joins_the_mount_point_and_the_path() {
        let mounts = cgroup2_mounts(UNIFIED_MOUNTINFO);
        assert_eq!(
            cgroup_dir(&mounts, "/user.slice/user-1000.slice/session-4.scope"),
            Some(PathBuf::from(
                "/sys/fs/cgroup/user.slice/user-1000.slice/session-4.scope"
            ))
        );
        // A mount of a sub-hierarchy holds only the paths below its root.
        let sub = vec![Cgroup2Mount {
            root: "/docker/abc".into(),
            mount_point: "/sys/fs/cgroup".into(),
            read_only: false,
        }];
        assert_eq!(
            cgroup_dir(&sub, "/docker/abc/inner"),
            Some(PathBuf::from("/sys/fs/cgroup/inner"))
        );
        assert_eq!(cgroup_dir(&sub, "/docker/abcdef"), None);
        assert_eq!(cgroup_dir(&sub, "/other"), None);
    }

    #[test]
    fn the_namespace_root_of_a_writable_hierarchy_is_used() {
        let placed = placement(HYBRID_CGROUP, HYBRID_MOUNTINFO, false, |_| false);
        assert_eq!(
            placed,
            Ok(Placement {
                parent: "/sys/fs/cgroup/unified".into()
            })
        );
        // Even with systemd as init: the root of a cgroup namespace is the container's.
        assert!(placement("0::/\n", UNIFIED_MOUNTINFO, true, |_| false).is_ok());
    }

    #[test]
    fn systemd_scopes_are_used_only_when_delegated() {
        let refused = placement(SESSION_CGROUP, UNIFIED_MOUNTINFO, true, |_| false);
        assert!(
            refused
                .as_ref()
                .is_err_and(|e| e.to_string().contains("has not delegated")),
            "{refused:?}"
        );
        let delegated = placement(SESSION_CGROUP, UNIFIED_MOUNTINFO, true, |dir| {
            dir.ends_with("session-4.scope")
        });
        assert!(delegated.is_ok(), "{delegated:?}");
        // Without systemd the kernel's permissions decide (when the cgroup is created).
        assert!(placement(SESSION_CGROUP, UNIFIED_MOUNTINFO, false, |_| false).is_ok());
    }

    #[test]
    fn a_read_only_or_missing_hierarchy_is_refused_with_the_reason() {
        let docker = placement("0::/\n", DOCKER_MOUNTINFO, false, |_| true);
        assert!(
            docker
                .as_ref()
                .is_err_and(|e| e.to_string().contains("read-only")),
            "{docker:?}"
        );
        let v1_only = "42 31 0:39 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n";
        let none = placement("1:memory:/\n", v1_only, false, |_| true);
        assert!(
            none.as_ref()
                .is_err_and(|e| e.to_string().contains("no cgroup v2")),
            "{none:?}"
        );
    }

    /// A run whose supervisor was killed leaves its (empty) cgroup; the next run removes
    /// it, and never one of a run still alive or of another name.
    #[cfg(target_os = "linux")]
    #[test]
    fn only_empty_cgroups_of_runs_no_longer_alive_are_removed() {
        let parent = tempfile::tempdir().unwrap();
        let dir = |name: &str| parent.path().join(name);
        for name in [
            "inferlint-xray-4000001-1",
            "inferlint-xray-77-2",
            "inferlint-xray-77-3",
            "other-4000001-1",
        ] {
            std::fs::create_dir(dir(name)).unwrap();
        }
        // A cgroup that still holds a process: here, a directory that is not empty.
        std::fs::create_dir(dir("inferlint-xray-4000002-1")).unwrap();
        std::fs::write(dir("inferlint-xray-4000002-1/cgroup.procs"), "5\n").unwrap();
        let ours = OwnCgroup::at(dir("inferlint-xray-77-3"));
        ours.remove_stale_siblings("inferlint-xray-", |pid| pid == 77);
        assert!(!dir("inferlint-xray-4000001-1").exists());
        for kept in [
            "inferlint-xray-77-2",
            "inferlint-xray-77-3",
            "other-4000001-1",
            "inferlint-xray-4000002-1",
        ] {
            assert!(dir(kept).exists(), "{kept} was removed");
        }
    }

    #[test]
    fn cgroup_procs_lists_pids_and_drops_zero() {
        // A PID from another PID namespace reads as 0.
        assert_eq!(parse_procs("12\n345\n0\n\n"), [12, 345]);
        assert!(parse_procs("").is_empty());
    }
}
