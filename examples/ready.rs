//! Bench-only start-to-ready probe for `bench/load.sh`: starts a server, polls
//! `GET /readyz` on its address every 100 µs and prints the milliseconds from spawn to the
//! first `200`, then stops the server it started (by its handle) and waits for it.
//!
//! `ready ADDR RUNS -- COMMAND [ARGS...]`: prints one line per run, then min and median.

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

fn ready(addr: SocketAddr) -> bool {
    let Ok(mut stream) = TcpStream::connect_timeout(&addr, Duration::from_millis(100)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
    if stream
        .write_all(b"GET /readyz HTTP/1.1\r\nHost: ready\r\nConnection: close\r\n\r\n")
        .is_err()
    {
        return false;
    }
    let mut head = [0_u8; 12];
    stream.read_exact(&mut head).is_ok() && head.starts_with(b"HTTP/1.1 200")
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(split) = args.iter().position(|a| a == "--") else {
        eprintln!("usage: ready ADDR RUNS -- COMMAND [ARGS...]");
        return ExitCode::FAILURE;
    };
    let (Some(addr), Some(runs), Some(program)) = (
        args.first().and_then(|a| a.parse::<SocketAddr>().ok()),
        args.get(1).and_then(|r| r.parse::<usize>().ok()),
        args.get(split + 1),
    ) else {
        eprintln!("usage: ready ADDR RUNS -- COMMAND [ARGS...]");
        return ExitCode::FAILURE;
    };
    let mut times = Vec::with_capacity(runs);
    for run in 0..runs {
        let started = Instant::now();
        let mut child = match Command::new(program)
            .args(&args[split + 2..])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
        {
            Ok(child) => child,
            Err(e) => {
                eprintln!("cannot start {program}: {e}");
                return ExitCode::FAILURE;
            }
        };
        let deadline = started + Duration::from_secs(5);
        let mut ok = false;
        while Instant::now() < deadline {
            if ready(addr) {
                ok = true;
                break;
            }
            std::thread::sleep(Duration::from_micros(100));
        }
        let elapsed = started.elapsed();
        let _ = child.kill();
        let _ = child.wait();
        if !ok {
            eprintln!("run {run}: not ready within 5 s");
            return ExitCode::FAILURE;
        }
        println!(
            "run {run}: ready after {:.2} ms",
            elapsed.as_secs_f64() * 1e3
        );
        times.push(elapsed);
    }
    times.sort();
    if let (Some(min), Some(median)) = (times.first(), times.get(times.len() / 2)) {
        println!(
            "start-to-ready: min {:.2} ms, median {:.2} ms over {runs} runs",
            min.as_secs_f64() * 1e3,
            median.as_secs_f64() * 1e3
        );
    }
    ExitCode::SUCCESS
}
