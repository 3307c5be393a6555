//! The agent against a fake memcached admin listener.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};

use super::*;

#[test]
fn metrics_text() {
    let m = Metrics::default();
    m.record(What::Tls, true);
    m.record(What::Auth, false);
    m.record_condition_write(false);
    let text = m.render();
    assert!(text.contains("memcached_reload_agent_condition_writes_total{result=\"failure\"} 1\n"));
    assert!(text.contains("memcached_reload_agent_condition_writes_total{result=\"success\"} 0\n"));
    assert!(
        text.contains("memcached_reload_agent_reloads_total{what=\"tls\",outcome=\"success\"} 1\n")
    );
    assert!(
        text.contains(
            "memcached_reload_agent_reloads_total{what=\"auth\",outcome=\"failure\"} 1\n"
        )
    );
    assert!(
        text.contains("memcached_reload_agent_last_success_timestamp_seconds{what=\"auth\"} 0\n")
    );
}

/// Nothing listens on the discard port.
const DISCARD: &str = "127.0.0.1:9";

/// The agent's options with no file to watch, talking to `admin_addr`.
fn nothing_watched(admin_addr: SocketAddr) -> Args {
    Args {
        tls_cert: None,
        tls_key: None,
        tls_ca: None,
        auth_file: None,
        auth_copy: None,
        proxy_routes: None,
        admin_addr,
        metrics_addr: "127.0.0.1:0".parse().unwrap(),
        interval_seconds: 1,
        timeout_ms: 200,
        process_name: "memcached".into(),
        pod_condition: false,
        pod_name: None,
        pod_namespace: None,
        api_token_file: apiclient::TOKEN_FILE.into(),
        api_ca_file: apiclient::CA_FILE.into(),
    }
}

/// A stand-in for memcached's admin listener that answers `OK` and counts the commands.
fn fake_memcached() -> (SocketAddr, Arc<AtomicU64>) {
    use std::io::{BufRead as _, Write as _};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(AtomicU64::new(0));
    let counter = Arc::clone(&seen);
    std::thread::spawn(move || {
        for stream in listener.incoming().take(16).flatten() {
            let mut line = String::new();
            let mut reader = std::io::BufReader::new(&stream);
            if reader.read_line(&mut line).is_ok() && line == "refresh_certs\r\n" {
                counter.fetch_add(1, Ordering::SeqCst);
                let _ = (&stream).write_all(b"OK\r\n");
            }
        }
    });
    (addr, seen)
}

/// The desired Pod condition as one line.
fn shown(rx: &tokio::sync::watch::Receiver<Option<Desired>>) -> Option<String> {
    rx.borrow()
        .as_ref()
        .map(|d| format!("{} {}: {}", d.status, d.reason, d.message))
}

/// The first poll delivers what is mounted; a refused change is never sent and not retried
/// until the content changes again. The desired Pod condition follows: True after the first
/// delivery, False with the error for the refused content, True again for the next good one.
#[test]
fn refused_material_is_never_sent_and_not_retried() {
    let (cert, key) = check::tests::pair("one");
    let (_, other_key) = check::tests::pair("two");
    let mut volume = crate::mounted::tests::Volume::new(
        "agent-refuse",
        &[("tls.crt", cert.as_bytes()), ("tls.key", key.as_bytes())],
    );
    let (admin_addr, sent) = fake_memcached();
    let args = Args {
        tls_cert: Some(volume.path("tls.crt")),
        tls_key: Some(volume.path("tls.key")),
        timeout_ms: 2000,
        ..nothing_watched(admin_addr)
    };
    let metrics = Arc::new(Metrics::default());
    let (tx, condition) = tokio::sync::watch::channel(None);
    let mut agent = Agent::new(&args, Arc::clone(&metrics), Some(tx)).unwrap();
    assert_eq!(shown(&condition), None, "nothing delivered yet");
    agent.poll();
    assert_eq!(metrics.counts(What::Tls), (1, 0), "first delivery");
    assert_eq!(
        shown(&condition).unwrap(),
        "True Reloaded: memcached took the mounted Secret (tls)"
    );
    agent.poll();
    assert_eq!(
        sent.load(Ordering::SeqCst),
        1,
        "unchanged files: nothing sent"
    );
    volume.publish(&[
        ("tls.crt", cert.as_bytes()),
        ("tls.key", other_key.as_bytes()),
    ]);
    for _ in 0..3 {
        agent.poll();
    }
    assert_eq!(
        metrics.counts(What::Tls),
        (1, 1),
        "refused once, not retried"
    );
    let failed = shown(&condition).unwrap();
    assert!(failed.starts_with("False ReloadFailed: tls: "), "{failed}");
    assert_eq!(
        sent.load(Ordering::SeqCst),
        1,
        "a foreign key never reaches memcached"
    );
    let (third_cert, third_key) = check::tests::pair("three");
    volume.publish(&[
        ("tls.crt", third_cert.as_bytes()),
        ("tls.key", third_key.as_bytes()),
    ]);
    agent.poll();
    assert_eq!(metrics.counts(What::Tls), (2, 1));
    assert!(shown(&condition).unwrap().starts_with("True Reloaded"));
    assert_eq!(sent.load(Ordering::SeqCst), 2);
}

#[test]
fn before_the_first_delivery_an_absent_memcached_is_no_failure() {
    let (cert, key) = check::tests::pair("one");
    let volume = crate::mounted::tests::Volume::new(
        "agent-absent",
        &[("tls.crt", cert.as_bytes()), ("tls.key", key.as_bytes())],
    );
    let args = Args {
        tls_cert: Some(volume.path("tls.crt")),
        tls_key: Some(volume.path("tls.key")),
        ..nothing_watched(DISCARD.parse().unwrap())
    };
    let metrics = Arc::new(Metrics::default());
    let mut agent = Agent::new(&args, Arc::clone(&metrics), None).unwrap();
    agent.poll();
    agent.poll();
    assert_eq!(metrics.counts(What::Tls), (0, 0));
}

/// A rotated Secret file without its last `\n` reaches memcached's copy normalised, before the
/// login is tried (memcached absent here: no failure yet, and the copy is already in place).
#[test]
fn a_rotated_auth_file_is_written_normalised_for_memcached() {
    let mut volume =
        crate::mounted::tests::Volume::new("agent-copy", &[("password-file", b"app:first")]);
    let copy = volume.dir.with_extension("copy");
    let args = Args {
        auth_file: Some(volume.path("password-file")),
        auth_copy: Some(copy.clone()),
        ..nothing_watched(DISCARD.parse().unwrap())
    };
    let metrics = Arc::new(Metrics::default());
    let mut agent = Agent::new(&args, Arc::clone(&metrics), None).unwrap();
    agent.poll();
    assert_eq!(std::fs::read(&copy).unwrap(), b"app:first\n");
    volume.publish(&[("password-file", b"app:second\r\n")]);
    agent.poll();
    assert_eq!(std::fs::read(&copy).unwrap(), b"app:second\n");
    volume.publish(&[("password-file", b"no colon")]);
    agent.poll();
    assert_eq!(
        std::fs::read(&copy).unwrap(),
        b"app:second\n",
        "a refused file never reaches memcached"
    );
    assert_eq!(metrics.counts(What::Auth), (0, 1));
    std::fs::remove_file(&copy).unwrap();
}

/// --pod-condition needs the Pod's name and namespace; empty ones are refused.
#[test]
fn pod_condition_flags_are_required_together() {
    use clap::error::ErrorKind;
    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }
    let parse = |extra: &[&str]| {
        let base = ["reload-agent", "--tls-cert", "c", "--tls-key", "k"];
        <Cli as clap::Parser>::try_parse_from(base.iter().chain(extra))
            .map(|c| c.args)
            .map_err(|e| e.kind())
    };
    assert_eq!(
        parse(&["--pod-condition"]).err(),
        Some(ErrorKind::MissingRequiredArgument)
    );
    assert_eq!(
        parse(&["--pod-condition", "--pod-name", "p"]).err(),
        Some(ErrorKind::MissingRequiredArgument)
    );
    assert_eq!(
        parse(&["--pod-condition", "--pod-name", "", "--pod-namespace", "n"]).err(),
        Some(ErrorKind::InvalidValue)
    );
    let args = parse(&["--pod-condition", "--pod-name", "p", "--pod-namespace", "n"]).unwrap();
    assert_eq!(args.api_token_file, PathBuf::from(apiclient::TOKEN_FILE));
    assert!(!parse(&[]).unwrap().pod_condition);
}

/// The environment that makes [`fake_proxy_process`] act: the routes file it loads.
const FAKE_PROXY_ROUTES: &str = "MEMCACHED_HOOK_FAKE_PROXY_ROUTES";
/// Where [`fake_proxy_process`] writes the port it listens on.
const FAKE_PROXY_PORT_FILE: &str = "MEMCACHED_HOOK_FAKE_PROXY_PORT_FILE";

/// A stand-in for memcached's proxy in a process of its own (this test binary, running only
/// this test): it loads the routes file at start, and again on each SIGHUP, counting each load
/// in `proxy_config_reloads` and a file containing "broken" in `proxy_config_reload_fails`
/// (keeping the routes it had), as memcached's proxy does. `stats` also names the loaded
/// routes. Its SIGHUP handler is in place before it listens. It ends after 60 s.
#[test]
#[ignore = "started as a process of its own by the proxy-mode tests"]
fn fake_proxy_process() {
    use std::io::{BufRead as _, Write as _};
    use std::sync::Mutex;
    let (Ok(routes), Ok(port_file)) = (
        std::env::var(FAKE_PROXY_ROUTES),
        std::env::var(FAKE_PROXY_PORT_FILE),
    ) else {
        return;
    };
    let state = Arc::new(Mutex::new((
        1u64,
        0u64,
        std::fs::read_to_string(&routes).unwrap(),
    )));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut hangups = rt
        .block_on(async { tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()) })
        .unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let served = Arc::clone(&state);
    std::thread::spawn(move || {
        for stream in listener.incoming().take(1000).flatten() {
            let mut reader = std::io::BufReader::new(&stream);
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 0) {
                if line == "stats\r\n" {
                    let (reloads, fails, loaded) = served.lock().unwrap().clone();
                    let reply = format!(
                        "STAT proxy_config_reloads {reloads}\r\nSTAT proxy_config_reload_fails \
                         {fails}\r\nSTAT fake_loaded {}\r\nEND\r\n",
                        loaded.trim()
                    );
                    let _ = (&stream).write_all(reply.as_bytes());
                }
                line.clear();
            }
        }
    });
    std::fs::write(&port_file, port.to_string()).unwrap();
    rt.block_on(async {
        let end = tokio::time::sleep(Duration::from_secs(60));
        tokio::pin!(end);
        loop {
            tokio::select! {
                _ = hangups.recv() => {}
                () = &mut end => return,
            }
            let text = std::fs::read_to_string(&routes).unwrap_or_default();
            let mut s = state.lock().unwrap();
            s.0 += 1;
            if text.contains("broken") {
                s.1 += 1;
            } else {
                s.2 = text;
            }
        }
    });
}

/// A running [`fake_proxy_process`] loading `routes`: the child, its port and its `comm`.
struct FakeProxy {
    child: std::process::Child,
    admin: Admin,
    comm: String,
}

impl FakeProxy {
    fn start(routes: &std::path::Path, name: &str) -> Self {
        let port_file = std::env::temp_dir().join(format!(
            "memcached-hook-fake-proxy-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_file(&port_file);
        let child = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "pod::reload_agent::tests::fake_proxy_process",
                "--ignored",
                "--quiet",
            ])
            .env(FAKE_PROXY_ROUTES, routes)
            .env(FAKE_PROXY_PORT_FILE, &port_file)
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let started = std::time::Instant::now();
        let port = loop {
            if let Ok(text) = std::fs::read_to_string(&port_file)
                && let Ok(port) = text.parse::<u16>()
            {
                break port;
            }
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "the fake proxy did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        std::fs::remove_file(&port_file).unwrap();
        let comm = std::fs::read_to_string(format!("/proc/{}/comm", child.id()))
            .unwrap()
            .trim_end()
            .to_owned();
        Self {
            child,
            admin: Admin {
                addr: SocketAddr::from(([127, 0, 0, 1], port)),
                timeout: Duration::from_secs(2),
            },
            comm,
        }
    }

    fn loaded(&self) -> (String, String, String) {
        let stats = self.admin.general_stats().unwrap();
        (
            stats["proxy_config_reloads"].clone(),
            stats["proxy_config_reload_fails"].clone(),
            stats["fake_loaded"].clone(),
        )
    }

    fn running(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }
}

impl Drop for FakeProxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Proxy mode with a real volume swap and a real process: the first delivery reloads what is
/// mounted once the proxy answers; a swapped file reaches the same process by SIGHUP; a file
/// the proxy refuses is counted once, not sent again, and the proxy keeps its routes; the next
/// good one is loaded.
#[test]
fn proxy_mode_reloads_swapped_routes_by_sighup() {
    let mut volume = crate::mounted::tests::Volume::new("agent-proxy", &[("routes.lua", b"one")]);
    let mut proxy = FakeProxy::start(&volume.path("routes.lua"), "reload");
    let args = Args {
        proxy_routes: Some(volume.path("routes.lua")),
        process_name: proxy.comm.clone(),
        ..nothing_watched(proxy.admin.addr)
    };
    let metrics = Arc::new(Metrics::default());
    let mut agent = Agent::new(&args, Arc::clone(&metrics), None).unwrap();
    agent.poll();
    assert_eq!(metrics.counts(What::Routes), (1, 0), "first delivery");
    assert_eq!(proxy.loaded(), ("2".into(), "0".into(), "one".into()));
    agent.poll();
    assert_eq!(proxy.loaded().0, "2", "unchanged routes: no signal");
    volume.publish(&[("routes.lua", b"two")]);
    agent.poll();
    assert_eq!(metrics.counts(What::Routes), (2, 0));
    assert_eq!(proxy.loaded(), ("3".into(), "0".into(), "two".into()));
    volume.publish(&[("routes.lua", b"broken")]);
    for _ in 0..3 {
        agent.poll();
    }
    assert_eq!(
        metrics.counts(What::Routes),
        (2, 1),
        "refused once, not sent again"
    );
    assert_eq!(proxy.loaded(), ("4".into(), "1".into(), "two".into()));
    volume.publish(&[("routes.lua", b"three")]);
    agent.poll();
    assert_eq!(metrics.counts(What::Routes), (3, 1));
    assert_eq!(proxy.loaded(), ("5".into(), "1".into(), "three".into()));
    assert!(proxy.running(), "the proxy was never ended");
    assert!(
        metrics.render().contains(
            "memcached_reload_agent_reloads_total{what=\"routes\",outcome=\"success\"} 3\n"
        )
    );
}

/// Before the proxy answers nothing is signalled and nothing fails; a listener that answers
/// `stats` without the proxy's counters is not memcached's proxy and is never signalled.
#[test]
fn proxy_mode_signals_only_a_proxy_that_answers() {
    use std::io::{BufRead as _, Write as _};
    let volume = crate::mounted::tests::Volume::new("agent-proxy-absent", &[("routes.lua", b"x")]);
    let args = Args {
        proxy_routes: Some(volume.path("routes.lua")),
        ..nothing_watched(DISCARD.parse().unwrap())
    };
    let metrics = Arc::new(Metrics::default());
    let mut agent = Agent::new(&args, Arc::clone(&metrics), None).unwrap();
    agent.poll();
    assert_eq!(
        metrics.counts(What::Routes),
        (0, 0),
        "not up yet: no failure"
    );
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(4).flatten() {
            let mut line = String::new();
            let _ = std::io::BufReader::new(&stream).read_line(&mut line);
            let _ = (&stream).write_all(b"STAT pid 1\r\nEND\r\n");
        }
    });
    let args = Args {
        admin_addr: addr,
        ..args
    };
    let mut agent = Agent::new(&args, Arc::clone(&metrics), None).unwrap();
    agent.poll();
    assert_eq!(
        metrics.counts(What::Routes),
        (0, 1),
        "not a proxy: a failure"
    );
}
