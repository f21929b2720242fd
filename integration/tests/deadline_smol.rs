//! Deadline scopes on smol, no tokio in the code: a scope on a
//! thread-driven timer is an ordinary future, so on smol's executor it
//! ends a far timeout made inside it at its deadline, naming it; a task
//! spawned from inside is outside it, unless the deadline is carried
//! (`deadline::current`, `Deadline::scope`).

use std::future::pending;
use std::time::{Duration, Instant};

use hashwheel::{deadline, Timer};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[test]
fn a_scope_on_smol_clips_and_is_carried_across_spawn() {
    // Two shards: a carried scope's own deadline goes on the shard of the
    // scope it was taken from, and the timeout clipped to it on the shard
    // of the thread that polls the spawned task, and the driver wakes one
    // shard's due entries before it takes the other's out. The task may
    // see the scope's deadline first: the scope's last poll then ends the
    // call with it (issue 56), so the call still ends first.
    let timer = Timer::builder().driver_thread().shards(2).build().unwrap();
    let far = Duration::from_secs(30);
    smol::block_on(async {
        let start = Instant::now();
        let (call, took) = timer
            .scope(ms(30), async {
                let call = timer.timeout(far, pending::<()>()).await;
                (call, start.elapsed())
            })
            .await
            .expect("the call ends with its scope");
        assert!(call.unwrap_err().is_inherited());
        assert!(took >= ms(30), "early: {took:?}");
        assert!(took < far, "{took:?}");

        let start = Instant::now();
        let (carried, plain) = timer
            .scope(ms(30), async {
                let carried = deadline::current().expect("inside");
                let t = timer.clone();
                let carried = smol::spawn(
                    carried.scope(async move { t.timeout(far, pending::<()>()).await }),
                );
                let plain = smol::spawn(async { deadline::remaining() });
                (carried, plain)
            })
            .await
            .expect("spawned in time");
        assert_eq!(plain.await, None, "a spawned task is outside");
        let call = carried.await.expect("the call ends with its scope");
        assert!(call.unwrap_err().is_inherited());
        assert!(start.elapsed() >= ms(30), "early: {:?}", start.elapsed());
        assert_eq!(timer.pending(), 0);
    });
}
