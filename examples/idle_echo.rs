//! A TCP echo server where every connection has an idle timeout, reset on
//! every read, and a heartbeat `Interval`; idle connections are closed.
//!
//! Every second it prints how many connections are open, how many were
//! active (sent something) in the last heartbeat period, and how many were
//! closed for being idle or by their peer. By default it also starts a few
//! demo clients (chatty ones, ones that go quiet, silent ones) and exits by
//! itself after 8 seconds:
//!
//! ```sh
//! cargo run --example idle_echo
//! cargo run --example idle_echo -- --clients 0 --run-for 0   # serve until Ctrl-C; try `nc 127.0.0.1 7007`
//! ```
//!
//! Options: `--addr 127.0.0.1:7007`, `--idle-ms 2000`, `--heartbeat-ms
//! 1000`, `--clients 20`, `--run-for 8` (seconds; 0: until Ctrl-C). The
//! server binds to loopback addresses only.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use hashwheel::{MissedTickBehavior, Timer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;

#[derive(Default)]
struct Counts {
    open: AtomicU64,
    active: AtomicU64,
    closed_idle: AtomicU64,
    closed_by_peer: AtomicU64,
    heartbeats: AtomicU64,
}

struct Config {
    addr: SocketAddr,
    idle: Duration,
    heartbeat: Duration,
    clients: usize,
    run_for: Duration,
}

fn parse_args() -> Result<Config, String> {
    let mut config = Config {
        addr: "127.0.0.1:7007".parse().unwrap(),
        idle: Duration::from_millis(2000),
        heartbeat: Duration::from_millis(1000),
        clients: 20,
        run_for: Duration::from_secs(8),
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let value = args.next().ok_or(format!("{arg} needs a value"))?;
        let num = || {
            value
                .parse::<u64>()
                .map_err(|e| format!("{arg} {value}: {e}"))
        };
        match arg.as_str() {
            "--addr" => config.addr = value.parse().map_err(|e| format!("--addr: {e}"))?,
            "--idle-ms" => config.idle = Duration::from_millis(num()?),
            "--heartbeat-ms" => config.heartbeat = Duration::from_millis(num()?),
            "--clients" => config.clients = num()? as usize,
            "--run-for" => config.run_for = Duration::from_secs(num()?),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if !config.addr.ip().is_loopback() {
        return Err("this example binds to loopback addresses only".into());
    }
    if config.heartbeat.is_zero() || config.idle.is_zero() {
        return Err("--idle-ms and --heartbeat-ms must be above 0".into());
    }
    Ok(config)
}

/// Echoes until the peer closes or stays idle too long; writes a heartbeat
/// line every period.
async fn connection(
    mut stream: TcpStream,
    timer: Timer,
    idle_for: Duration,
    heartbeat: Duration,
    counts: Arc<Counts>,
) {
    let mut idle = timer.sleep(idle_for);
    let mut ticks = timer.interval_at(Instant::now() + heartbeat, heartbeat);
    // A slow peer must not get a burst of heartbeats.
    ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut active = false; // sent something since the last heartbeat
    let mut counted_active = false; // counted in `counts.active`
    let mut buf = vec![0; 4096];
    loop {
        tokio::select! {
            read = stream.read(&mut buf) => match read {
                Ok(0) | Err(_) => {
                    counts.closed_by_peer.fetch_add(1, Ordering::Relaxed);
                    break;
                }
                Ok(n) => {
                    idle.reset(idle_for); // O(1): moves the timeout in the wheel
                    active = true;
                    if stream.write_all(&buf[..n]).await.is_err() {
                        counts.closed_by_peer.fetch_add(1, Ordering::Relaxed);
                        break;
                    }
                }
            },
            () = &mut idle => {
                let _ = stream.write_all(b"bye: idle\n").await;
                counts.closed_idle.fetch_add(1, Ordering::Relaxed);
                break;
            }
            _ = ticks.tick() => {
                counts.heartbeats.fetch_add(1, Ordering::Relaxed);
                if active != counted_active {
                    if active {
                        counts.active.fetch_add(1, Ordering::Relaxed);
                    } else {
                        counts.active.fetch_sub(1, Ordering::Relaxed);
                    }
                    counted_active = active;
                }
                active = false;
                if stream.write_all(b"heartbeat\n").await.is_err() {
                    counts.closed_by_peer.fetch_add(1, Ordering::Relaxed);
                    break;
                }
            }
        }
    }
    if counted_active {
        counts.active.fetch_sub(1, Ordering::Relaxed);
    }
    counts.open.fetch_sub(1, Ordering::Relaxed);
}

/// A demo client: `kind` 0 chats all along, 1 chats for 2 s then goes
/// quiet, 2 never says anything. Reads everything the server sends.
async fn client(addr: SocketAddr, kind: usize, id: usize) {
    let Ok(stream) = TcpStream::connect(addr).await else {
        return;
    };
    let (mut rd, mut wr) = stream.into_split();
    tokio::spawn(async move {
        let mut buf = [0; 1024];
        while matches!(rd.read(&mut buf).await, Ok(n) if n > 0) {}
    });
    let chat_for = match kind {
        0 => Duration::MAX,
        1 => Duration::from_secs(2),
        _ => Duration::ZERO,
    };
    let start = Instant::now();
    while start.elapsed() < chat_for {
        if wr
            .write_all(format!("hello from {id}\n").as_bytes())
            .await
            .is_err()
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    // Keep the connection open, silent, until the server closes it.
    std::future::pending::<()>().await;
}

#[tokio::main]
async fn main() {
    let config = match parse_args() {
        Ok(config) => config,
        Err(err) => {
            eprintln!("error: {err}");
            eprintln!("usage: idle_echo [--addr 127.0.0.1:7007] [--idle-ms 2000] [--heartbeat-ms 1000] [--clients 20] [--run-for 8]");
            std::process::exit(2);
        }
    };
    let listener = match TcpListener::bind(config.addr).await {
        Ok(listener) => listener,
        Err(err) => {
            eprintln!("error: bind {}: {err}", config.addr);
            std::process::exit(1);
        }
    };
    let addr = listener.local_addr().expect("bound");
    let timer = Timer::new();
    let counts = Arc::new(Counts::default());
    println!(
        "idle_echo on {addr}: idle timeout {:?}, heartbeat every {:?}, {} demo clients",
        config.idle, config.heartbeat, config.clients
    );

    let server = {
        let (timer, counts) = (timer.clone(), counts.clone());
        let (idle, heartbeat) = (config.idle, config.heartbeat);
        async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                counts.open.fetch_add(1, Ordering::Relaxed);
                tokio::spawn(connection(
                    stream,
                    timer.clone(),
                    idle,
                    heartbeat,
                    counts.clone(),
                ));
            }
        }
    };
    tokio::spawn(server);
    for id in 0..config.clients {
        // Half chatty, a quarter go quiet after 2 s, a quarter silent.
        let kind = match id % 4 {
            0 | 1 => 0,
            2 => 1,
            _ => 2,
        };
        tokio::spawn(client(addr, kind, id));
    }

    let start = Instant::now();
    let mut report = timer.interval_at(start + Duration::from_secs(1), Duration::from_secs(1));
    let stop = async {
        if config.run_for.is_zero() {
            std::future::pending::<()>().await
        } else {
            timer.sleep(config.run_for).await
        }
    };
    tokio::pin!(stop);
    loop {
        tokio::select! {
            _ = report.tick() => {
                let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
                println!(
                    "[{:>4.1}s] open {:>3}  active {:>3}  closed-idle {:>3}  closed-by-peer {:>3}  heartbeats {:>4}  timer pending {}",
                    start.elapsed().as_secs_f64(),
                    get(&counts.open),
                    get(&counts.active),
                    get(&counts.closed_idle),
                    get(&counts.closed_by_peer),
                    get(&counts.heartbeats),
                    timer.pending(),
                );
            }
            _ = &mut stop => break,
            _ = tokio::signal::ctrl_c() => break,
        }
    }
    println!("done");
}
