//! Nothing secret leaves the process: the real binary, with every log level on, is driven with
//! right and wrong credentials, a credential rotation and a broken credential file, and neither
//! its log, nor an answer body, nor `/metrics` ever contains a credential or a guessed one.

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;

const BIN: &str = env!("CARGO_BIN_EXE_memcached-hook");
const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/sync/steady-state.json"
);

/// Every string that must never appear outside the credential files.
const TOKEN: &str = "tok-SECRET-4f1c9a";
const ROTATED: &str = "tok-SECRET-rotated-77b2";
const USER: &str = "user-SECRET-ab12";
const PASSWORD: &str = "pw-SECRET-c0ffee";
const GUESS: &str = "guess-SECRET-0000";

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// One HTTP/1.1 exchange on a fresh connection; returns the whole answer, head and body.
fn exchange(addr: SocketAddr, method: &str, path: &str, authorization: Option<&str>) -> String {
    let body = if method == "POST" {
        std::fs::read(FIXTURE).expect("fixture")
    } else {
        Vec::new()
    };
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: hook\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    if method == "POST" {
        head.push_str("Content-Type: application/json\r\n");
    }
    if let Some(value) = authorization {
        head.push_str(&format!("Authorization: {value}\r\n"));
    }
    head.push_str("\r\n");
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    stream.write_all(head.as_bytes()).expect("write head");
    stream.write_all(&body).expect("write body");
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).expect("read answer");
    String::from_utf8_lossy(&answer).into_owned()
}

fn status(answer: &str) -> &str {
    answer.get(9..12).unwrap_or("")
}

fn basic(user: &str, password: &str) -> String {
    let pair = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    format!("Basic {pair}")
}

/// Waits (bounded) until `check` holds.
fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The server process; killed if the test fails before stopping it.
struct Server(Option<Child>);

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Server {
    /// `serve` on `addr` with `args`, logging JSON at `trace` into files in `dir`; returns once
    /// it listens.
    fn start(dir: &std::path::Path, addr: SocketAddr, args: &[&std::ffi::OsStr]) -> Self {
        let child = Command::new(BIN)
            .args(["serve", "--addr", &addr.to_string(), "--log-format", "json"])
            .args(args)
            .env("RUST_LOG", "trace")
            // Files, not pipes: a full pipe would stall a server that logs at trace level.
            .stdout(Stdio::from(
                std::fs::File::create(dir.join("stdout")).expect("log file"),
            ))
            .stderr(Stdio::from(
                std::fs::File::create(dir.join("stderr")).expect("log file"),
            ))
            .spawn()
            .expect("the binary starts");
        let server = Self(Some(child));
        eventually("the server to listen", || TcpStream::connect(addr).is_ok());
        server
    }

    /// SIGTERM, so the log is complete; the server must exit 0. Returns the whole log.
    fn stop(mut self, dir: &std::path::Path) -> String {
        let mut child = self.0.take().expect("running");
        let killed = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .expect("kill");
        assert!(killed.success());
        let exit = child.wait().expect("the server exits");
        assert!(exit.success(), "exit status {exit:?}");
        let read = |name: &str| {
            String::from_utf8_lossy(&std::fs::read(dir.join(name)).expect("log")).into_owned()
        };
        read("stderr") + &read("stdout")
    }
}

#[test]
fn no_credential_reaches_a_log_line_an_answer_or_a_metric() {
    let dir = std::env::temp_dir().join(format!("memcached-hook-secrets-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let (token, user, password) = (dir.join("token"), dir.join("user"), dir.join("password"));
    std::fs::write(&token, format!("{TOKEN}\n")).expect("write");
    std::fs::write(&user, USER).expect("write");
    std::fs::write(&password, PASSWORD).expect("write");

    let addr = SocketAddr::from(([127, 0, 0, 1], free_port()));
    let server = Server::start(
        &dir,
        addr,
        &[
            "--reload-interval-seconds".as_ref(),
            "1".as_ref(),
            "--auth-token-file".as_ref(),
            token.as_os_str(),
            "--auth-basic-username-file".as_ref(),
            user.as_os_str(),
            "--auth-basic-password-file".as_ref(),
            password.as_os_str(),
        ],
    );

    let mut answers = Vec::new();
    let mut call = |method: &str, path: &str, auth: Option<&str>, want: &str| {
        let answer = exchange(addr, method, path, auth);
        assert_eq!(status(&answer), want, "{method} {path} {auth:?}: {answer}");
        answers.push(answer);
    };
    call("POST", "/sync", Some(&format!("Bearer {TOKEN}")), "200");
    call("POST", "/sync", Some(&basic(USER, PASSWORD)), "200");
    call("POST", "/sync", Some(&format!("Bearer {GUESS}")), "401");
    call("POST", "/sync", Some(&basic(USER, GUESS)), "401");
    call("POST", "/sync", Some(&basic(GUESS, PASSWORD)), "401");
    call("POST", "/sync", Some(GUESS), "401");
    call("POST", "/customize", Some(&format!("Token {GUESS}")), "401");
    call("POST", "/sync", None, "401");

    // Rotation: once the file changes, the old token is refused and the new one accepted.
    std::fs::write(&token, ROTATED).expect("write");
    eventually("the rotated token", || {
        status(&exchange(addr, "GET", "/readyz", None)) == "200"
            && status(&exchange(
                addr,
                "POST",
                "/sync",
                Some(&format!("Bearer {ROTATED}")),
            )) == "200"
    });
    call("POST", "/sync", Some(&format!("Bearer {TOKEN}")), "401");
    // A broken file (empty) keeps the rotated token in force and is reported without content.
    std::fs::write(&token, "").expect("write");
    std::thread::sleep(Duration::from_millis(2500));
    call("POST", "/sync", Some(&format!("Bearer {ROTATED}")), "200");
    call("GET", "/metrics", None, "200");

    let log = server.stop(&dir);
    // The log is real: it saw the requests, the rotation and the broken file.
    assert!(log.contains("memcached-hook serving"), "{log}");
    assert!(log.contains("reloaded"), "{log}");
    assert!(log.contains("not reloaded"), "{log}");

    let pair =
        |u: &str, p: &str| base64::engine::general_purpose::STANDARD.encode(format!("{u}:{p}"));
    let forbidden = [
        TOKEN.to_owned(),
        ROTATED.to_owned(),
        USER.to_owned(),
        PASSWORD.to_owned(),
        GUESS.to_owned(),
        "SECRET".to_owned(),
        pair(USER, PASSWORD),
        pair(USER, GUESS),
        pair(GUESS, PASSWORD),
    ];
    for needle in &forbidden {
        assert!(
            !log.contains(needle.as_str()),
            "the log contains {needle:?}"
        );
        for answer in &answers {
            assert!(
                !answer.contains(needle.as_str()),
                "an answer contains {needle:?}: {answer}"
            );
        }
    }
    std::fs::remove_dir_all(&dir).expect("cleanup");
}

/// `POST /sync` of `body` on a fresh connection; the whole answer.
fn post_sync(addr: SocketAddr, body: &[u8]) -> String {
    let head = format!(
        "POST /sync HTTP/1.1\r\nHost: hook\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    stream.write_all(head.as_bytes()).expect("write head");
    stream.write_all(body).expect("write body");
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).expect("read answer");
    String::from_utf8_lossy(&answer).into_owned()
}

#[test]
fn a_secrets_data_reaches_no_log_line_and_no_answer_whatever_its_shape() {
    const CONTENT: &str = "data-SECRET-5e1f";
    let encoded = base64::engine::general_purpose::STANDARD.encode(CONTENT);
    let dir = std::env::temp_dir().join(format!("memcached-hook-data-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let addr = SocketAddr::from(([127, 0, 0, 1], free_port()));
    let server = Server::start(&dir, addr, &[]);

    let base: serde_json::Value =
        serde_json::from_slice(&std::fs::read(FIXTURE).expect("fixture")).expect("json");
    let mut answers = Vec::new();
    for (data, want) in [
        (serde_json::json!(CONTENT), "422"),
        (serde_json::json!(encoded), "422"),
        (serde_json::json!({ "password": CONTENT.len() }), "422"),
        (serde_json::json!({ "password": [CONTENT] }), "422"),
        (serde_json::json!({ "password": { "v": encoded } }), "422"),
        (serde_json::json!([encoded]), "422"),
        (serde_json::json!({ "password": encoded }), "200"),
        (serde_json::json!({ "password": CONTENT }), "200"),
    ] {
        let mut request = base.clone();
        request["related"] = serde_json::json!({"Secret.v1": {"shop/sasl": {
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "sasl", "namespace": "shop"},
            "data": data
        }}});
        let answer = post_sync(addr, &serde_json::to_vec(&request).expect("encode"));
        assert_eq!(status(&answer), want, "{data}: {answer}");
        answers.push(answer);
    }
    let log = server.stop(&dir);
    // The log is real: it saw the refusals.
    assert!(log.contains("its content is not shown"), "{log}");
    for needle in [CONTENT, encoded.as_str(), "SECRET"] {
        assert!(!log.contains(needle), "the log contains {needle:?}");
        for answer in &answers {
            assert!(
                !answer.contains(needle),
                "an answer contains {needle:?}: {answer}"
            );
        }
    }
    std::fs::remove_dir_all(&dir).expect("cleanup");
}

#[test]
fn a_credential_file_no_client_can_send_is_refused_at_start_without_its_content() {
    let dir = std::env::temp_dir().join(format!(
        "memcached-hook-unsendable-it-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).expect("dir");
    let (token, user, password) = (dir.join("token"), dir.join("user"), dir.join("password"));
    std::fs::write(&user, USER).expect("write");
    for (file, content) in [
        (&token, format!("{TOKEN}\n{GUESS}\n")),
        (&token, format!("{TOKEN}\0")),
        (&token, format!("{TOKEN}\u{e9}")),
        (&password, format!("{PASSWORD}\r\n{GUESS}")),
    ] {
        std::fs::write(file, &content).expect("write");
        let mut command = Command::new(BIN);
        command.args(["serve", "--addr", "127.0.0.1:0"]);
        if file == &token {
            command.arg("--auth-token-file").arg(&token);
        } else {
            command.arg("--auth-basic-username-file").arg(&user);
            command.arg("--auth-basic-password-file").arg(&password);
        }
        let out = command.output().expect("the binary runs");
        let text = String::from_utf8_lossy(&out.stderr).into_owned()
            + &String::from_utf8_lossy(&out.stdout);
        assert!(!out.status.success(), "{content:?} accepted: {text}");
        assert!(text.contains("which no client can send"), "{text}");
        assert!(text.contains(&file.display().to_string()), "{text}");
        for needle in [TOKEN, PASSWORD, GUESS, "SECRET"] {
            assert!(!text.contains(needle), "{needle:?} in {text}");
        }
    }
    std::fs::remove_dir_all(&dir).expect("cleanup");
}
