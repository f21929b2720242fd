//! `Builder` validation.

use std::time::Duration;

use hashwheel::Timer;

fn config_error(builder: hashwheel::Builder) -> String {
    let err = builder.build().unwrap_err();
    assert!(err.is_invalid_config(), "{err}");
    assert!(!err.is_stopped() && !err.is_at_capacity());
    err.to_string()
}

#[tokio::test]
async fn zero_tick_is_an_error_naming_the_value() {
    let msg = config_error(Timer::builder().tick(Duration::ZERO));
    assert_eq!(
        msg,
        "invalid timer configuration: tick must be non-zero, got 0ns"
    );
}

#[tokio::test]
async fn wheel_sizes_out_of_range_are_errors() {
    assert!(config_error(Timer::builder().wheel_size(0)).ends_with("got 0"));
    let too_big = (1 << 20) + 1;
    let msg = config_error(Timer::builder().wheel_size(too_big));
    assert!(
        msg.ends_with(&format!("between 1 and 2^20 (1048576), got {too_big}")),
        "{msg}"
    );
}

#[tokio::test]
async fn a_span_that_overflows_is_an_error() {
    let msg = config_error(Timer::builder().tick(Duration::MAX));
    assert!(msg.contains("overflows the wheel's span"), "{msg}");
    assert!(msg.contains(&format!("{:?}", Duration::MAX)), "{msg}");
    let tick = Duration::from_secs(u64::MAX / 4);
    let msg = config_error(Timer::builder().tick(tick).wheel_size(8));
    assert!(msg.contains("8 buckets"), "{msg}");
}

#[tokio::test]
async fn shard_counts_out_of_range_are_errors() {
    assert!(config_error(Timer::builder().shards(0)).ends_with("got 0"));
    assert!(config_error(Timer::builder().shards(70_000)).ends_with("got 70000"));
}

#[test]
fn outside_a_runtime_build_fails_and_new_panics() {
    let msg = config_error(Timer::builder());
    assert!(msg.contains("no tokio runtime"), "{msg}");
    let panic = std::panic::catch_unwind(Timer::new).unwrap_err();
    assert!(panic
        .downcast_ref::<String>()
        .unwrap()
        .contains("no tokio runtime"));
}

#[test]
fn an_explicit_handle_works_outside_the_runtime() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let timer = Timer::builder()
        .handle(rt.handle().clone())
        .build()
        .unwrap();
    rt.block_on(timer.sleep(Duration::from_millis(2)));
    assert_eq!(timer.pending(), 0);
}

/// Issue 27: a sub-millisecond tick on a runtime-driven timer quietly
/// became 1 ms, with a `tracing` warning no one without a subscriber saw.
/// It is an error naming the driver that takes such ticks; the smallest
/// tick allowed is kept as given.
#[tokio::test]
async fn a_sub_millisecond_tick_on_a_runtime_is_an_error_naming_driver_thread() {
    for tick in [Duration::from_micros(500), Duration::from_nanos(999_999)] {
        let msg = config_error(Timer::builder().tick(tick));
        assert!(msg.contains("driver_thread()"), "{msg}");
        assert!(msg.contains(&format!("got {tick:?}")), "{msg}");
        assert!(msg.contains("at least 1ms"), "{msg}");
    }
    let timer = Timer::builder()
        .tick(Duration::from_millis(1))
        .build()
        .unwrap();
    assert_eq!(timer.tick(), Duration::from_millis(1));
    let timer = Timer::builder()
        .tick(Duration::from_micros(1500))
        .build()
        .unwrap();
    assert_eq!(timer.tick(), Duration::from_micros(1500));
}

#[tokio::test]
async fn wheel_size_rounds_up_to_a_power_of_two() {
    let timer = Timer::builder().wheel_size(1).build().unwrap();
    assert_eq!(timer.wheel_size(), 1);
    let timer = Timer::builder().wheel_size(513).build().unwrap();
    assert_eq!(timer.wheel_size(), 1024);
    let timer = Timer::new();
    assert_eq!(timer.wheel_size(), 512);
    assert_eq!(timer.tick(), Duration::from_millis(1));
}

#[tokio::test(start_paused = true)]
async fn a_one_bucket_wheel_still_fires_on_time() {
    let timer = Timer::builder().wheel_size(1).build().unwrap();
    let start = tokio::time::Instant::now();
    timer.sleep(Duration::from_millis(37)).await;
    assert_eq!(start.elapsed(), Duration::from_millis(37));
}

/// Regression: on a runtime built without `enable_time` the driver panicked
/// on its first sleep and the timer stopped itself, so that `sleep(5 s)`
/// returned at once and later calls panicked with "timer is stopped".
#[test]
fn a_runtime_without_a_time_driver_is_a_config_error_naming_the_fix() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let msg = config_error(Timer::builder().handle(rt.handle().clone()));
    assert_eq!(
        msg,
        "invalid timer configuration: the runtime has no time driver: \
         build it with enable_time() or enable_all()"
    );
    assert_eq!(rt.metrics().num_alive_tasks(), 0, "no driver was spawned");
    let panic = rt
        .block_on(async { std::panic::catch_unwind(Timer::new) })
        .unwrap_err();
    let panic = panic.downcast_ref::<String>().unwrap();
    assert!(panic.contains("enable_time() or enable_all()"), "{panic}");
}

#[test]
fn a_runtime_with_only_the_time_driver_is_enough() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let timer = Timer::builder()
        .handle(rt.handle().clone())
        .build()
        .unwrap();
    rt.block_on(timer.sleep(Duration::from_millis(2)));
    assert!(!timer.is_stopped());
}

#[tokio::test]
async fn a_capacity_past_what_a_shard_holds_is_refused() {
    let msg = config_error(Timer::builder().shards(1).capacity(usize::MAX));
    assert!(msg.contains("capacity"), "{msg}");
}

/// A shard holds `u32::MAX - 3` timeouts: a capacity of exactly that on one
/// shard is taken, one more is an error (issue 26, fix 5: the store said it
/// "ran out of keys" at the bound itself).
#[tokio::test]
async fn the_capacity_bound_is_exact() {
    let most = u32::MAX as usize - 3;
    let msg = config_error(Timer::builder().shards(1).capacity(most + 1));
    assert!(msg.contains("(4294967292)"), "{msg}");
    // Split over shards: each shard's part, rounded up, is what counts.
    config_error(Timer::builder().shards(2).capacity(2 * most + 1));
}

/// The other side of [`the_capacity_bound_is_exact`]: `u32::MAX - 3` on one
/// shard passes the checks, and is reserved where the memory is. Reserving
/// it takes 160 GiB, so a child process (this test binary again, running
/// only this test) builds it under an address-space limit (`ulimit -v`):
/// the build fails with `Error::is_out_of_memory`, not with a capacity
/// error (issue 56: an allocation failure aborted the process; see
/// `tests/build_capacity.rs`).
#[test]
#[cfg(target_os = "linux")]
fn a_capacity_of_exactly_what_a_shard_holds_is_reserved() {
    const CHILD: &str = "HASHWHEEL_TEST_RESERVE_MOST";
    let most = u32::MAX as usize - 3;
    if std::env::var_os(CHILD).is_some() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let _enter = rt.enter();
        let err = Timer::builder()
            .shards(1)
            .capacity(most)
            .build()
            .unwrap_err();
        assert!(err.is_out_of_memory() && !err.is_invalid_config(), "{err}");
        return;
    }
    let exe = std::env::current_exe().unwrap();
    // 1 GiB of address space: the binary and a runtime, not the pages.
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 1048576 && exec \"$0\" --exact --test-threads=1 --nocapture \"$1\"")
        .arg(exe)
        .arg("a_capacity_of_exactly_what_a_shard_holds_is_reserved")
        .env(CHILD, "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{:?}\n{stderr}", out.status);
}
