//! The crate's feature gates, each written once: an item group goes inside
//! the macro of its gate (tokio's `macros/cfg.rs` pattern), so that
//! `lib.rs` and each folder's `mod.rs` read as tables of contents. A gate
//! on a public item also says so in the docs (`doc(cfg)`, on docs.rs),
//! but for `tokio`, the default feature, which the docs leave unsaid.

/// Items of the timer, on either driver: `tokio` or `thread`.
macro_rules! cfg_timer {
    ($($item:item)*) => {
        $(
            #[cfg(any(feature = "tokio", feature = "thread"))]
            $item
        )*
    };
}

/// Items that need tokio (the default feature).
macro_rules! cfg_tokio {
    ($($item:item)*) => {
        $(
            #[cfg(feature = "tokio")]
            $item
        )*
    };
}

/// Items of the thread driver (feature `thread`).
macro_rules! cfg_thread {
    ($($item:item)*) => {
        $(
            #[cfg(feature = "thread")]
            #[cfg_attr(docsrs, doc(cfg(feature = "thread")))]
            $item
        )*
    };
}
