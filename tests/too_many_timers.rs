//! Netty's too-many-timers warning: the 65th live `Timer` of one runtime
//! logs `tracing::warn!`, once per process; 64 do not, clones count once,
//! and a timer stops counting when it stops or its last handle goes.
//!
//! A test binary of its own: the warning is once per process, so no
//! other test may build timers beside it (the second test builds none: it
//! runs the first in a child process, to read its stderr).

mod common;

use std::time::Duration;

use common::capture::Capture;
use hashwheel::Timer;
use tracing::Level;

const WARNING: &str = "hashwheel: too many live Timers on one runtime";

/// The too-many-timers warnings `capture` recorded.
fn too_many(capture: &Capture) -> Vec<String> {
    capture
        .messages(Level::WARN)
        .into_iter()
        .filter(|m| m.starts_with(WARNING))
        .collect()
}

/// `n` timers whose driver runs on `rt`.
fn timers_on(rt: &tokio::runtime::Runtime, n: usize) -> Vec<Timer> {
    (0..n)
        .map(|_| {
            Timer::builder()
                .handle(rt.handle().clone())
                .build()
                .unwrap()
        })
        .collect()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn the_65th_live_timer_of_a_runtime_warns_once() {
    let capture = Capture::default();
    let _subscriber = tracing::subscriber::set_default(capture.clone());
    let rt = runtime();
    let _runtime = rt.enter();

    // 64 live timers, some cloned many times, are fine.
    let mut timers: Vec<Timer> = (0..64).map(|_| Timer::new()).collect();
    let clones: Vec<Timer> = (0..100).map(|_| timers[0].clone()).collect();
    assert_eq!(too_many(&capture).len(), 0);

    // Another runtime's timers count for that runtime only.
    let other = runtime();
    let on_other = timers_on(&other, 10);
    assert_eq!(too_many(&capture).len(), 0);

    // A stopped timer no longer counts, though its handles live on.
    timers[0].stop();
    timers.push(Timer::new());
    assert_eq!(too_many(&capture).len(), 0, "64 live: one of 65 is stopped");

    // Nor one whose every handle is gone.
    drop(timers.remove(1));
    timers.push(Timer::new());
    assert_eq!(too_many(&capture).len(), 0, "64 live: one of 66 is gone");

    // One whose `Timer`s are gone but which a timeout keeps counts still.
    let timeout = timers.remove(1).sleep(Duration::from_secs(60));
    assert_eq!(too_many(&capture).len(), 0);
    timers.push(Timer::new());
    assert_eq!(too_many(&capture).len(), 1, "the 65th live timer warns");
    let warning = &too_many(&capture)[0];
    assert!(warning.contains("build one per runtime"), "{warning}");

    // Once per process.
    timers.extend((0..10).map(|_| Timer::new()));
    let more_on_other = timers_on(&other, 60);
    assert_eq!(too_many(&capture).len(), 1);
    drop((clones, on_other, more_on_other, timeout));
}

/// Issue 27: the warning went only to `tracing`, invisible to a program
/// without a subscriber. It goes to stderr too, once per process: the test
/// above, run in a child process with `--nocapture` (libtest captures
/// `eprintln!` otherwise), prints it once.
#[test]
fn the_warning_also_goes_to_stderr_once() {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "the_65th_live_timer_of_a_runtime_warns_once",
            "--nocapture",
            "--test-threads=1",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stderr.matches(WARNING).count(), 1, "{stderr}");
    assert!(stderr.contains("build one per runtime"), "{stderr}");
}
