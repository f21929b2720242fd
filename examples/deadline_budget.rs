//! A request's deadline, inherited by the timeouts inside its handler
//! (`hashwheel::deadline`): the handler calls a cache (its own timeout
//! 50 ms), a database (150 ms) and a downstream service (1 s), each
//! written on its own with `hashwheel::time::timeout`, as library code
//! would be. Run in a 300 ms scope, the downstream call is cut to the time
//! left, and its error says the request ran out rather than the service
//! was slow; a second request whose cache is slow shows the other case; a
//! third carries the deadline into a task it spawns.
//!
//! ```sh
//! cargo run --example deadline_budget
//! ```
//!
//! It prints, for each call, its own timeout, the time left when it
//! started, how long it took and what ended it, then exits (under a
//! second).

use std::future::Future;

use hashwheel::deadline;
use hashwheel::time::{sleep, timeout, Duration, Instant};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A call to a backend that answers after `takes`, under a timeout of its
/// own, as a client library writes it; prints what happened.
async fn call(name: &str, own: Duration, takes: Duration) -> Result<(), String> {
    let left = deadline::remaining();
    let start = Instant::now();
    let res = timeout(own, sleep(takes)).await;
    let took = start.elapsed();
    let outcome = match &res {
        Ok(()) => "answered".to_string(),
        Err(e) if e.is_inherited() => "cut: the request's deadline passed".to_string(),
        Err(_) => format!("its own {own:?} timeout passed: {name} was slow"),
    };
    println!(
        "  {name:<10} own timeout {:>7}, time left {:>9}, takes {:>7}: {outcome} after {:.1?}",
        format!("{own:?}"),
        left.map_or("-".to_string(), |l| format!("{:.1?}", l)),
        format!("{takes:?}"),
        took,
    );
    res.map_err(|e| e.to_string())
}

/// The handler: three calls one after another.
async fn handler(cache_takes: Duration) -> Result<&'static str, String> {
    call("cache", ms(50), cache_takes).await.ok();
    call("database", ms(150), ms(120)).await?;
    call("downstream", Duration::from_secs(1), Duration::from_secs(2)).await?;
    Ok("ok")
}

async fn request<F: Future<Output = Result<&'static str, String>>>(title: &str, handler: F) {
    println!("{title}");
    let start = Instant::now();
    let res = deadline::scope(ms(300), handler).await;
    let answer = match res {
        Ok(Ok(body)) => format!("200 {body}"),
        Ok(Err(e)) => format!("504 ({e})"),
        Err(e) => format!("504 (the scope ended: {e})"),
    };
    println!("  -> {answer} after {:.1?}\n", start.elapsed());
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    request(
        "request 1: a 300 ms deadline; cache 10 ms, database 120 ms, downstream 2 s",
        handler(ms(10)),
    )
    .await;
    request(
        "request 2: the same, with a slow cache (80 ms, over its own 50 ms)",
        handler(ms(80)),
    )
    .await;

    println!("request 3: the handler spawns the downstream call, carrying the deadline");
    let start = Instant::now();
    let spawned = deadline::scope(ms(300), async {
        call("database", ms(150), ms(120)).await.ok();
        let carried = deadline::current().expect("inside the scope");
        let plain = tokio::spawn(async {
            let left = deadline::remaining();
            let res = timeout(ms(400), sleep(Duration::from_secs(2))).await;
            (left, res)
        });
        let with = tokio::spawn(carried.scope(async {
            call("downstream", Duration::from_secs(1), Duration::from_secs(2)).await
        }));
        (plain, with)
    })
    .await
    .expect("spawned in time");
    let (plain, with) = spawned;
    let with = with.await.expect("the task");
    println!(
        "  carried task: {} after {:.1?}",
        match with {
            Ok(Ok(())) => "answered".to_string(),
            Ok(Err(e)) => format!("failed: {e}"),
            Err(e) => format!("its scope ended: {e}"),
        },
        start.elapsed()
    );
    let (left, res) = plain.await.expect("the task");
    println!(
        "  plain task:   time left {left:?} (outside the scope), its own 400 ms timeout: {} after {:.1?}",
        if res.is_err() { "passed" } else { "answered" },
        start.elapsed()
    );
}
