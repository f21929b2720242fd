//! A smol TCP server with hashwheel's timers and no tokio: each
//! connection has an idle timeout, re-set by every line it sends, and a
//! heartbeat, both through `hashwheel::async_io::Timer` (async-io's
//! `Timer` API, what `smol::Timer` is, switched by its `use` line); and a
//! session table whose entries expire a while after their connection's
//! last line, through the executor-free `hashwheel::async_io::DelayQueue`.
//!
//! It starts demo clients (chatty ones that talk and leave, quiet ones that
//! say hello and go silent until the server closes them), prints what
//! happened, and exits by itself after 4 seconds:
//!
//! ```sh
//! cargo run -p hashwheel-integration --example smol_sessions
//! cargo run -p hashwheel-integration --example smol_sessions -- --clients 0 --run-for 0   # serve until Ctrl-C; try `nc 127.0.0.1 7008`
//! ```
//!
//! Options: `--addr 127.0.0.1:7008`, `--idle-ms 600`, `--heartbeat-ms 250`,
//! `--session-ms 1000`, `--clients 12`, `--run-for 4` (seconds; 0: until
//! Ctrl-C). The server binds to loopback addresses only (port 0: any free
//! port).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use hashwheel::async_io::delay_queue::{DelayQueue, Key};
use hashwheel::async_io::Timer;
use smol::channel::{Receiver, Sender};
use smol::future::FutureExt;
use smol::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use smol::net::{TcpListener, TcpStream};
use smol::stream::StreamExt;

#[derive(Default)]
struct Counts {
    connections: AtomicU64,
    lines: AtomicU64,
    heartbeats: AtomicU64,
    closed_idle: AtomicU64,
    closed_by_peer: AtomicU64,
    sessions_opened: AtomicU64,
    sessions_expired: AtomicU64,
}

struct Config {
    addr: SocketAddr,
    idle: Duration,
    heartbeat: Duration,
    session: Duration,
    clients: usize,
    run_for: Duration,
}

fn parse_args() -> Result<Config, String> {
    let mut config = Config {
        addr: "127.0.0.1:7008".parse().unwrap(),
        idle: Duration::from_millis(600),
        heartbeat: Duration::from_millis(250),
        session: Duration::from_millis(1000),
        clients: 12,
        run_for: Duration::from_secs(4),
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
            "--session-ms" => config.session = Duration::from_millis(num()?),
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

/// What a connection tells the session table.
enum Session {
    /// A connection opened session `id`.
    Open(u64, SocketAddr),
    /// Session `id` sent a line: it lives `--session-ms` from now.
    Touch(u64),
}

/// The session table: one task owns the map and its expirations, so the
/// queue needs no lock. A session lives `ttl` after its last line, whether
/// or not its connection is still open (a client may come back to it).
async fn session_table(commands: Receiver<Session>, ttl: Duration, counts: Arc<Counts>) {
    let mut sessions: HashMap<u64, (SocketAddr, Key)> = HashMap::new();
    let mut expirations = DelayQueue::new();
    enum Event {
        Command(Option<Session>),
        Expired(u64),
    }
    loop {
        let event = async { Event::Command(commands.recv().await.ok()) }
            .or(async {
                // An empty queue's stream ends (`None`) at once: wait on
                // the commands alone until there is something to expire.
                match expirations.next().await {
                    Some(expired) => Event::Expired(expired.into_inner()),
                    None => std::future::pending().await,
                }
            })
            .await;
        match event {
            Event::Command(Some(Session::Open(id, peer))) => {
                let key = expirations.insert(id, ttl);
                sessions.insert(id, (peer, key));
                counts.sessions_opened.fetch_add(1, Ordering::Relaxed);
            }
            Event::Command(Some(Session::Touch(id))) => {
                if let Some((_, key)) = sessions.get(&id) {
                    expirations.reset(key, ttl);
                }
            }
            Event::Command(None) => return,
            Event::Expired(id) => {
                if let Some((peer, _)) = sessions.remove(&id) {
                    counts.sessions_expired.fetch_add(1, Ordering::Relaxed);
                    println!("  session {id} ({peer}) expired");
                }
            }
        }
    }
}

/// Echoes lines until the peer closes or stays idle too long; writes a
/// heartbeat line every `--heartbeat-ms`.
async fn serve(
    stream: TcpStream,
    id: u64,
    config: Arc<Config>,
    sessions: Sender<Session>,
    counts: Arc<Counts>,
) -> std::io::Result<()> {
    let peer = stream.peer_addr()?;
    let _ = sessions.send(Session::Open(id, peer)).await;
    let mut writer = stream.clone();
    let mut lines = BufReader::new(stream).lines();
    let mut idle = Timer::after(config.idle);
    let mut heartbeat = Timer::interval(config.heartbeat);
    enum Event {
        Line(Option<std::io::Result<String>>),
        Beat,
        Idle,
    }
    loop {
        let event = async { Event::Line(lines.next().await) }
            .or(async {
                heartbeat.next().await;
                Event::Beat
            })
            .or(async {
                (&mut idle).await;
                Event::Idle
            })
            .await;
        match event {
            Event::Line(Some(line)) => {
                let line = line?;
                counts.lines.fetch_add(1, Ordering::Relaxed);
                // Active: push the idle deadline back, in O(1).
                idle.set_after(config.idle);
                let _ = sessions.send(Session::Touch(id)).await;
                writer
                    .write_all(format!("echo {line}\n").as_bytes())
                    .await?;
            }
            Event::Line(None) => {
                counts.closed_by_peer.fetch_add(1, Ordering::Relaxed);
                return Ok(());
            }
            Event::Beat => {
                counts.heartbeats.fetch_add(1, Ordering::Relaxed);
                writer.write_all(b"heartbeat\n").await?;
            }
            Event::Idle => {
                counts.closed_idle.fetch_add(1, Ordering::Relaxed);
                let _ = writer.write_all(b"bye: idle\n").await;
                return Ok(());
            }
        }
    }
}

/// A demo client: a chatty one sends a line every 150 ms for 1.5 s and
/// leaves; a quiet one says hello and reads until the server closes it.
async fn client(addr: SocketAddr, chatty: bool) -> std::io::Result<()> {
    let stream = TcpStream::connect(addr).await?;
    let mut writer = stream.clone();
    let mut lines = BufReader::new(stream).lines();
    if chatty {
        for i in 0..10 {
            writer.write_all(format!("line {i}\n").as_bytes()).await?;
            // Its echo (heartbeats may come first).
            while let Some(line) = lines.next().await {
                if line?.starts_with("echo") {
                    break;
                }
            }
            Timer::after(Duration::from_millis(150)).await;
        }
        // Done: close our side, and read what the server still sends until
        // it closes its own.
        writer.close().await?;
        while let Some(line) = lines.next().await {
            line?;
        }
        Ok(())
    } else {
        writer.write_all(b"hello\n").await?;
        while let Some(line) = lines.next().await {
            if line?.starts_with("bye") {
                break;
            }
        }
        Ok(())
    }
}

fn main() {
    let config = match parse_args() {
        Ok(config) => Arc::new(config),
        Err(err) => {
            eprintln!("smol_sessions: {err}");
            std::process::exit(2);
        }
    };
    let counts = Arc::new(Counts::default());
    smol::block_on(async {
        let listener = match TcpListener::bind(config.addr).await {
            Ok(listener) => listener,
            Err(err) => {
                eprintln!("smol_sessions: cannot bind {}: {err}", config.addr);
                std::process::exit(1);
            }
        };
        let addr = listener.local_addr().expect("local address");
        println!(
            "smol server on {addr}: idle timeout {:?}, heartbeat {:?}, sessions live {:?} \
             after their last line",
            config.idle, config.heartbeat, config.session
        );
        let (tx, rx) = smol::channel::unbounded();
        let table = smol::spawn(session_table(rx, config.session, counts.clone()));

        let accept = {
            let (config, counts) = (config.clone(), counts.clone());
            smol::spawn(async move {
                for id in 0.. {
                    let Ok((stream, _)) = listener.accept().await else {
                        continue;
                    };
                    counts.connections.fetch_add(1, Ordering::Relaxed);
                    let (config, tx, counts) = (config.clone(), tx.clone(), counts.clone());
                    smol::spawn(async move {
                        if let Err(err) = serve(stream, id, config, tx, counts).await {
                            eprintln!("  connection {id}: {err}");
                        }
                    })
                    .detach();
                }
            })
        };

        let clients: Vec<_> = (0..config.clients)
            .map(|i| smol::spawn(client(addr, i % 2 == 0)))
            .collect();
        if config.run_for.is_zero() {
            // Until Ctrl-C.
            std::future::pending::<()>().await;
        }
        Timer::after(config.run_for).await;
        for client in clients {
            if let Some(Err(err)) = client.cancel().await {
                eprintln!("  a demo client failed: {err}");
            }
        }
        accept.cancel().await;
        table.cancel().await;
    });
    let c = |n: &AtomicU64| n.load(Ordering::Relaxed);
    println!(
        "after {:?}: {} connections ({} closed idle, {} by their peer), {} lines echoed, \
         {} heartbeats sent; {} sessions opened, {} expired",
        config.run_for,
        c(&counts.connections),
        c(&counts.closed_idle),
        c(&counts.closed_by_peer),
        c(&counts.lines),
        c(&counts.heartbeats),
        c(&counts.sessions_opened),
        c(&counts.sessions_expired),
    );
}
