//! Which process listens on a TCP port (T13: the server that answers is the one xray
//! started). The kernel lists listening sockets in `/proc/net/tcp` and `/proc/net/tcp6`
//! with their inode; a process holds the socket when one of its `/proc/PID/fd` links
//! reads `socket:[INODE]`.

use std::collections::BTreeSet;

use crate::procs::ProcessTable;

/// The TCP state code of a listening socket in `/proc/net/tcp`.
const LISTEN: &str = "0A";

/// The inodes of the sockets listening on `port` in one `/proc/net/tcp{,6}` table.
/// Lines that do not read are skipped.
pub fn listening_inodes(table: &str, port: u16) -> Vec<u64> {
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let local = fields.get(1)?;
            let state = fields.get(3)?;
            let inode: u64 = fields.get(9)?.parse().ok()?;
            let (_, port_hex) = local.rsplit_once(':')?;
            let local_port = u16::from_str_radix(port_hex, 16).ok()?;
            (*state == LISTEN && local_port == port && inode != 0).then_some(inode)
        })
        .collect()
}

/// The socket inode a `/proc/PID/fd` link names (`socket:[12345]`).
pub fn socket_inode(link: &str) -> Option<u64> {
    link.strip_prefix("socket:[")?
        .strip_suffix(']')?
        .parse()
        .ok()
}

/// `root` and every process below it in the table.
pub fn descendants(table: &ProcessTable, root: u32) -> BTreeSet<u32> {
    let children = table.children();
    let mut found = BTreeSet::from([root]);
    let mut todo = vec![root];
    while let Some(pid) = todo.pop() {
        for child in children.get(&pid).into_iter().flatten() {
            if found.insert(*child) {
                todo.push(*child);
            }
        }
    }
    found
}

/// What the listening socket of a port says about its owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PortOwner {
    /// Nothing listens on the port (in this network namespace).
    NotListening,
    /// One of the given processes holds the listening socket.
    Ours(u32),
    /// Something listens, and none of the given processes holds it.
    Other,
}

#[cfg(target_os = "linux")]
mod linux {
    use super::*;

    /// Who listens on `port`: one of `pids`, someone else, or nobody. `None` when the
    /// socket tables cannot be read.
    pub fn port_owner(port: u16, pids: &BTreeSet<u32>) -> Option<PortOwner> {
        let mut inodes = BTreeSet::new();
        let mut read_any = false;
        for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
            if let Ok(text) = std::fs::read_to_string(table) {
                read_any = true;
                inodes.extend(listening_inodes(&text, port));
            }
        }
        if !read_any {
            return None;
        }
        if inodes.is_empty() {
            return Some(PortOwner::NotListening);
        }
        for pid in pids {
            let Ok(entries) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
                continue;
            };
            for entry in entries.flatten() {
                let holds = std::fs::read_link(entry.path())
                    .ok()
                    .and_then(|l| socket_inode(&l.to_string_lossy()))
                    .is_some_and(|inode| inodes.contains(&inode));
                if holds {
                    return Some(PortOwner::Ours(*pid));
                }
            }
        }
        Some(PortOwner::Other)
    }

    /// The process that holds the socket listening on `port`, looked for among every
    /// process this user may inspect. `None` when nothing listens or no visible process
    /// holds it (another user's, another PID namespace's).
    pub fn port_listener(port: u16) -> Option<u32> {
        let table = crate::procs::read_process_table().ok()?;
        let pids: BTreeSet<u32> = table.iter().map(|p| p.pid).collect();
        match port_owner(port, &pids)? {
            PortOwner::Ours(pid) => Some(pid),
            _ => None,
        }
    }
}

#[cfg(target_os = "linux")]
pub use linux::{port_listener, port_owner};

#[cfg(test)]
mod tests {
    use super::*;

    const TCP: &str = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 412345 1 0000000000000000 100 0 0 10 0
   1: 0100007F:1F90 0100007F:C350 01 00000000:00000000 00:00000000 00000000  1000        0 412399 1 0000000000000000 20 4 30 10 -1
   2: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1111 1 0000000000000000 100 0 0 10 0
";

    #[test]
    fn finds_the_listening_socket_of_a_port() {
        assert_eq!(listening_inodes(TCP, 8080), [412345]);
        assert_eq!(listening_inodes(TCP, 22), [1111]);
        assert!(listening_inodes(TCP, 8000).is_empty());
        assert!(listening_inodes("garbage\nmore garbage", 8080).is_empty());
    }

    #[test]
    fn reads_fd_links() {
        assert_eq!(socket_inode("socket:[412345]"), Some(412345));
        assert_eq!(socket_inode("pipe:[1]"), None);
        assert_eq!(socket_inode("/dev/null"), None);
    }
}
