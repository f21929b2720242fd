//! Feeds operation sequences to the wheel's paged store and checks every
//! step against a `BTreeMap` reference model: insert, remove, keys that
//! hold nothing, reserve, shrink, compact and clear, across page
//! boundaries. See `fuzz/README.md`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    hashwheel::fuzzing::store(data);
});
