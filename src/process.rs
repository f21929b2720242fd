//! Which process this is, in a way a pid namespace cannot fool: the fork
//! checks of the paths a forked child may take through what it inherited
//! (a contended lock, a stop, the thread driver's alarm, `Delay`'s poll).
//!
//! A process id is relative to its pid namespace. A process that is pid 1
//! of its namespace (a container's init) may fork a child into a new pid
//! namespace, where the child is pid 1 too: `getpid` alone took that child
//! for its parent, which hung it (a `Delay` waiting on a driver thread the
//! child does not have) and let it stall the parent (a stop that shut the
//! timerfd the two share). A process here is its id and the inode of its
//! pid namespace (`/proc/self/ns/pid`): two processes alive together never
//! share both. Reading the namespace costs a few microseconds (a
//! `readlink` through `/proc`), so the checks make it only on slow paths,
//! and only once `getpid` has matched: a child of the usual kind is told
//! apart by its id alone.
//!
//! Where there is no `/proc` (not mounted, or another system than Linux,
//! which has no pid namespaces) the namespace reads as 0 for every
//! process, and the id alone tells processes apart, as before.
//!
//! A thread-driven timer on Linux has a cheaper test, a [`Witness`]: a
//! `memfd` its process holds a record lock on. Record locks belong to a
//! process and a child does not inherit them, so asking the kernel whether
//! another process holds the lock (`F_GETLK`, a few hundred nanoseconds)
//! tells the timer's process from any child of it alive beside it, whatever
//! its id; `Delay`'s poll, which checks often, takes that test.
//!
//! A leaf: it imports nothing of the crate.

/// A process: its id and its pid namespace's inode, packed in a word
/// (`namespace << 32 | pid`) so that it fits one atomic. The kernel
/// numbers namespaces' inodes in 32 bits (`proc_alloc_inum`), from
/// `0xF000_0000` up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Process(u64);

impl Process {
    /// This process: a `getpid` and a read of its pid namespace (a few
    /// microseconds: slow paths only).
    pub(crate) fn current() -> Process {
        Process::new(std::process::id(), pid_namespace())
    }

    fn new(pid: u32, namespace: u32) -> Process {
        Process(u64::from(namespace) << 32 | u64::from(pid))
    }

    /// The process id, in the process's own pid namespace.
    pub(crate) fn pid(self) -> u32 {
        self.0 as u32
    }

    /// Whether this is the calling process: its id first (a `getpid`,
    /// which tells an ordinary forked child apart), and only if that
    /// matches, its pid namespace (a child forked into a new one may have
    /// its parent's id).
    pub(crate) fn is_current(self) -> bool {
        std::process::id() == self.pid() && pid_namespace() == (self.0 >> 32) as u32
    }

    /// The word, for an atomic; never 0 (a process id is not).
    #[cfg_attr(not(feature = "thread"), allow(dead_code))]
    pub(crate) fn to_bits(self) -> u64 {
        self.0
    }

    /// The process of [`to_bits`](Self::to_bits) (a test's made-up one).
    #[cfg(test)]
    pub(crate) fn from_bits(bits: u64) -> Process {
        Process(bits)
    }
}

/// A process's record lock, held from its making to the end of the
/// process (or the witness's drop): where the calling process holds it,
/// it is the process that made it. One file descriptor (a `memfd`, close
/// on exec).
#[cfg(all(feature = "thread", target_os = "linux"))]
#[derive(Debug)]
pub(crate) struct Witness {
    /// The maker's process id.
    pid: u32,
    lock: rustix::fd::OwnedFd,
}

#[cfg(all(feature = "thread", target_os = "linux"))]
impl Witness {
    /// A witness of this process; `None` where the system refuses a
    /// `memfd` or its lock (the callers fall back on [`Process`]).
    pub(crate) fn new() -> Option<Witness> {
        use rustix::fs::{fcntl_lock, memfd_create, FlockOperation, MemfdFlags};
        let lock = memfd_create("hashwheel-process", MemfdFlags::CLOEXEC).ok()?;
        fcntl_lock(&lock, FlockOperation::NonBlockingLockExclusive).ok()?;
        Some(Witness {
            pid: std::process::id(),
            lock,
        })
    }

    /// Whether the calling process made it, as far as a process alive
    /// beside its maker can tell: a `getpid` (another id: another process),
    /// then whether another process holds the lock (`F_GETLK`: the maker,
    /// alive, seen from a child of it, whatever the child's id). `None`
    /// where the kernel would not say (the descriptor was closed under us).
    ///
    /// Once the maker has exited nobody holds the lock, and a process with
    /// the maker's id (a descendant in another pid namespace, or one that
    /// reused the id) is taken for it, as by a `getpid` alone.
    pub(crate) fn is_current(&self) -> Option<bool> {
        use rustix::process::{fcntl_getlk, Flock, FlockOffsetType, FlockType};
        if std::process::id() != self.pid {
            return Some(false);
        }
        let whole = Flock {
            start: 0,
            length: 0,
            pid: None,
            typ: FlockType::WriteLock,
            offset_type: FlockOffsetType::Set,
        };
        // The caller's own lock never conflicts with its request.
        fcntl_getlk(&self.lock, &whole)
            .ok()
            .map(|held| held.is_none())
    }
}

/// The inode of this process's pid namespace, from the link
/// `/proc/self/ns/pid` (`pid:[4026531836]`); 0 where it cannot be read.
fn pid_namespace() -> u32 {
    #[cfg(target_os = "linux")]
    {
        std::fs::read_link("/proc/self/ns/pid")
            .ok()
            .and_then(|link| parse_namespace(link.to_str()?))
            .unwrap_or(0)
    }
    #[cfg(not(target_os = "linux"))]
    {
        0
    }
}

/// The inode in a namespace link's target, `pid:[4026531836]`.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn parse_namespace(target: &str) -> Option<u32> {
    target
        .strip_prefix("pid:[")?
        .strip_suffix(']')?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_namespace_link_reads_as_its_inode() {
        assert_eq!(parse_namespace("pid:[4026531836]"), Some(4_026_531_836));
        assert_eq!(parse_namespace("net:[4026531836]"), None);
        assert_eq!(parse_namespace("pid:[]"), None);
        assert_eq!(parse_namespace("pid:[99999999999]"), None, "past 32 bits");
    }

    /// The packing keeps both halves, and another namespace or another id
    /// is another process.
    #[test]
    fn a_process_is_its_id_and_its_namespace() {
        let me = Process::current();
        assert!(me.is_current());
        assert_eq!(me.pid(), std::process::id());
        assert_eq!(Process::from_bits(me.to_bits()), me);
        assert_ne!(me.to_bits(), 0);
        let namespace = (me.to_bits() >> 32) as u32;
        #[cfg(target_os = "linux")]
        if std::path::Path::new("/proc/self/ns/pid").exists() {
            assert_ne!(namespace, 0, "read from /proc");
        }
        let elsewhere = Process::new(me.pid(), namespace.wrapping_add(1));
        assert!(!elsewhere.is_current(), "the same id in another namespace");
        let other = Process::new(me.pid().wrapping_add(1), namespace);
        assert!(!other.is_current(), "another id");
    }
}
