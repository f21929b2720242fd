//! Feeds operation sequences to one wheel and checks every step against a
//! `BTreeMap` reference model, twice: the core as the timer uses it (insert,
//! remove, reset, advance, advance to the next expiration, drain, shrink),
//! and the public `hashwheel::wheel::Wheel` (insert, remove, reset, poll,
//! peek, compact, clear, stale keys). See `fuzz/README.md`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    hashwheel::fuzzing::wheel(data);
});
