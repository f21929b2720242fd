//! Which process this is, in a way a pid namespace cannot fool and a
//! process that loses `/proc` does not mistake: [`Origin`], the one owner
//! of the question "is the caller still in the process that built this
//! timer?", which every fork check asks (a contended lock, a stop, a
//! task's release, the thread driver's alarm, `Delay`'s poll).
//!
//! A process id is relative to its pid namespace. A process that is pid 1
//! of its namespace (a container's init) may fork a child into a new pid
//! namespace, where the child is pid 1 too: `getpid` alone took that child
//! for its parent, which hung it (a `Delay` waiting on a driver thread the
//! child does not have) and let it stall the parent (a stop that shut the
//! timerfd the two share). A [`Process`] is its id and the inode of its
//! pid namespace (`/proc/self/ns/pid`): two processes alive together never
//! share both. Reading the namespace costs a few microseconds (a
//! `readlink` through `/proc`), so the checks make it only on slow paths,
//! and only once `getpid` has matched: a child of the usual kind is told
//! apart by its id alone.
//!
//! `/proc` may be missing (not mounted, or another system than Linux,
//! which has no pid namespaces), or go away after the timer was built (a
//! daemon that chroots into an empty jail to drop privileges, Landlock, an
//! unmount). A namespace that cannot be read is unknown, never a
//! different one: the id alone then decides, as where there are no
//! namespaces (a process that lost `/proc` once took itself for a forked
//! child: it fired sleeps at once as cancelled and its `stop` woke
//! nothing). The one case that leaves undecided, a child forked into a new
//! pid namespace with its parent's id, by a process that has lost `/proc`,
//! is decided by the witness below where there is one: `Delay`'s default
//! timers ask it of every timer found under the caller's word, so that
//! such a child starts one of its own (see [`Process::current_read`]).
//!
//! On Linux with the feature `thread`, an [`Origin`] also has a
//! [`Witness`]: a `memfd` its process holds a record lock on. Record locks
//! belong to a process and a child does not inherit them, so asking the
//! kernel whether another process holds the lock (`F_GETLK`, a few hundred
//! nanoseconds, no `/proc`) tells the timer's process from any child of it
//! alive beside it, whatever its id and namespace.
//!
//! A leaf: it imports nothing of the crate.

use std::sync::atomic::{AtomicU64, Ordering};

/// The process a timer was built in, and the test of whether the caller
/// is still in it: built once, as the timer is
/// ([`Builder::build`](crate::Builder::build)), and shared by its shards,
/// its driver and alarm, and through the timer by `Delay` and the queues
/// on it.
#[derive(Debug)]
pub(crate) struct Origin {
    process: Process,
    /// The cheaper and surer test, where the system gives one.
    witness: Option<Witness>,
}

impl Origin {
    /// The calling process: a `getpid`, a read of its pid namespace and,
    /// where it can, a witness (a `memfd` and its lock): at a timer's
    /// build only.
    pub(crate) fn here() -> Origin {
        Origin {
            process: Process::current(),
            witness: Witness::new(),
        }
    }

    /// The process's id: the first test of every check, one compare with
    /// a `getpid`.
    #[inline]
    pub(crate) fn pid(&self) -> u32 {
        self.process.pid()
    }

    /// Whether the caller is in this process, not a child forked from it:
    /// a `getpid` (another id: another process); then the witness, where
    /// there is one (an `F_GETLK`); else the pid namespace, where it can be
    /// read now and could be at the build (a few microseconds); else the
    /// id alone. Slow paths only: two system calls in the process itself.
    pub(crate) fn is_current(&self) -> bool {
        if std::process::id() != self.pid() {
            return false;
        }
        // The id matched: the witness (without a second `getpid`), else
        // the namespace.
        if let Some(here) = self.witness.as_ref().and_then(Witness::held_here) {
            return here;
        }
        self.process.is_current_namespace()
    }
}

/// A process: its id and its pid namespace's inode, packed in a word
/// (`namespace << 32 | pid`) so that it fits one atomic. The kernel
/// numbers namespaces' inodes in 32 bits (`proc_alloc_inum`), from
/// `0xF000_0000` up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Process(u64);

impl Process {
    /// This process: a `getpid` and a read of its pid namespace (a few
    /// microseconds: slow paths only). Where the namespace cannot be read
    /// now, the one this process last read (a process that lost `/proc`
    /// stays the process it was), or unknown (0).
    pub(crate) fn current() -> Process {
        Process::current_read().0
    }

    /// [`current`](Self::current), and whether its namespace was read
    /// now. Where it was not, the word may be an ancestor's too: a child
    /// forked into a new pid namespace, where it is pid 1, by a pid 1 that
    /// has lost `/proc` takes its parent's last reading (only the witness
    /// of a timer tells the two apart, see [`Origin::is_current`]).
    #[cfg_attr(not(feature = "thread"), allow(dead_code))]
    pub(crate) fn current_read() -> (Process, bool) {
        let pid = std::process::id();
        let (namespace, read) = match pid_namespace() {
            Some(namespace) => (namespace, true),
            None => {
                let last = LAST_READ.load(Ordering::Relaxed);
                let namespace = if last as u32 == pid {
                    (last >> 32) as u32
                } else {
                    0
                };
                (namespace, false)
            }
        };
        (Process::new(pid, namespace), read)
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
    /// its parent's id), where both this process's and the caller's are
    /// known: a namespace that cannot be read (no `/proc`, or no longer)
    /// leaves the id alone to decide.
    #[cfg(test)]
    pub(crate) fn is_current(self) -> bool {
        std::process::id() == self.pid() && self.is_current_namespace()
    }

    /// Whether the caller's pid namespace is this process's, where both
    /// are known: the test after the id's (see [`Origin::is_current`]).
    fn is_current_namespace(self) -> bool {
        let ours = self.namespace();
        ours == 0 || pid_namespace().map_or(true, |theirs| theirs == ours)
    }

    /// The inode of the process's pid namespace; 0 where it is unknown.
    fn namespace(self) -> u32 {
        (self.0 >> 32) as u32
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

#[cfg(all(feature = "thread", target_os = "linux"))]
use record_lock::Witness;
#[cfg(not(all(feature = "thread", target_os = "linux")))]
use no_witness::Witness;

/// The witness where there is one: Linux, with the feature `thread` (its
/// `rustix`).
#[cfg(all(feature = "thread", target_os = "linux"))]
mod record_lock {
    /// A process's record lock, held from its making to the end of the
    /// process (or the witness's drop): where the calling process holds it,
    /// it is the process that made it. One file descriptor (a `memfd`, close
    /// on exec). Asked only after a `getpid` matched the maker's id (see
    /// [`Origin::is_current`](super::Origin::is_current)).
    #[derive(Debug)]
    pub(crate) struct Witness {
        lock: rustix::fd::OwnedFd,
    }

    impl Witness {
        /// A witness of this process; `None` where the system refuses a
        /// `memfd` or its lock (the callers fall back on [`Process`]).
        pub(crate) fn new() -> Option<Witness> {
            use rustix::fs::{fcntl_lock, memfd_create, FlockOperation, MemfdFlags};
            let lock = memfd_create("hashwheel-process", MemfdFlags::CLOEXEC).ok()?;
            fcntl_lock(&lock, FlockOperation::NonBlockingLockExclusive).ok()?;
            Some(Witness { lock })
        }

        /// Whether the calling process, whose id is the maker's, made it,
        /// as far as a process alive beside its maker can tell: whether
        /// another process holds the lock (`F_GETLK`: the maker, alive,
        /// seen from a child of it, whatever the child's id and namespace).
        /// `None` where the kernel would not say (the descriptor was closed
        /// under us).
        ///
        /// Once the maker has exited nobody holds the lock, and a process with
        /// the maker's id (a descendant in another pid namespace, or one that
        /// reused the id) is taken for it, as by a `getpid` alone.
        pub(crate) fn held_here(&self) -> Option<bool> {
            use rustix::process::{fcntl_getlk, Flock, FlockOffsetType, FlockType};
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
}

/// No witness: the callers fall back on [`Process`].
#[cfg(not(all(feature = "thread", target_os = "linux")))]
mod no_witness {
    /// A witness there cannot be.
    #[derive(Debug)]
    pub(crate) enum Witness {}

    impl Witness {
        pub(crate) fn new() -> Option<Witness> {
            None
        }

        pub(crate) fn held_here(&self) -> Option<bool> {
            match *self {}
        }
    }
}

/// The last namespace this process read, with its id
/// (`namespace << 32 | pid`): what [`Process::current`] falls back on once
/// `/proc` is gone. A forked child inherits it, and tells it is not its
/// own by the id.
static LAST_READ: AtomicU64 = AtomicU64::new(0);

/// The inode of this process's pid namespace, from the link
/// `/proc/self/ns/pid` (`pid:[4026531836]`); `None` where it cannot be
/// read (no `/proc`, not mounted, unreadable, or no longer there).
fn pid_namespace() -> Option<u32> {
    #[cfg(target_os = "linux")]
    {
        let namespace = std::fs::read_link("/proc/self/ns/pid")
            .ok()
            .and_then(|link| parse_namespace(link.to_str()?))?;
        let read = u64::from(namespace) << 32 | u64::from(std::process::id());
        LAST_READ.store(read, Ordering::Relaxed);
        Some(namespace)
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
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
        if pid_namespace().is_some() {
            let elsewhere = Process::new(me.pid(), namespace.wrapping_add(1));
            assert!(!elsewhere.is_current(), "the same id in another namespace");
        }
        let other = Process::new(me.pid().wrapping_add(1), namespace);
        assert!(!other.is_current(), "another id");
    }

    /// A namespace that is not known is not another one: the id decides
    /// (a process built without `/proc`, or that lost it since).
    #[test]
    fn an_unknown_namespace_leaves_the_id_to_decide() {
        let me = Process::current();
        assert!(Process::new(me.pid(), 0).is_current());
        assert!(!Process::new(me.pid().wrapping_add(1), 0).is_current());
        let origin = Origin::here();
        assert!(origin.is_current());
        assert_eq!(origin.pid(), std::process::id());
    }
}
