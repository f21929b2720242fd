//! Feeds operation sequences (insert, remove, reset, advance, advance to the
//! next expiration, drain, shrink) to one wheel and checks every step
//! against a `BTreeMap` reference model. See `fuzz/README.md`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    hashwheel::fuzzing::wheel(data);
});
