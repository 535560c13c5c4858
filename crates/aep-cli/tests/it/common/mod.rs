//! What the binary tests share: running the built `aep` with a deadline, an embedded
//! relay on `127.0.0.1:0`, and reading back what a relay holds.
#![allow(dead_code)] // each test file uses its own part of this module

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use aep::blocking::SubscribeOptions;
use aep::protocol::Event;
use aep::relay::Relay;
use aep::testing::ThreadRelay;

/// The token the test relays require.
pub const TOKEN: &str = "cli-test-token";

/// What a run of `aep` left.
#[derive(Debug)]
pub struct Run {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// The exit code (a signal is a test failure).
    pub fn code(&self) -> i32 {
        self.status
            .code()
            .unwrap_or_else(|| panic!("aep died of a signal; stderr:\n{}", self.stderr))
    }

    /// Asserts the exit code, showing both streams when it is not.
    #[track_caller]
    pub fn expect(&self, code: i32) -> &Run {
        assert_eq!(
            self.code(),
            code,
            "exit code; stdout:\n{}\nstderr:\n{}",
            self.stdout,
            self.stderr
        );
        self
    }

    /// Asserts stderr holds `needle`, showing stderr when it does not.
    #[track_caller]
    pub fn stderr_has(&self, needle: &str) -> &Run {
        holds("stderr", &self.stderr, needle, true);
        self
    }

    /// Asserts stdout holds `needle`, showing stdout when it does not.
    #[track_caller]
    pub fn stdout_has(&self, needle: &str) -> &Run {
        holds("stdout", &self.stdout, needle, true);
        self
    }

    /// Asserts stderr does not hold `needle` (a secret, say), showing stderr when it does.
    #[track_caller]
    pub fn stderr_lacks(&self, needle: &str) -> &Run {
        holds("stderr", &self.stderr, needle, false);
        self
    }

    /// stdout, one line per element.
    pub fn lines(&self) -> Vec<&str> {
        self.stdout.lines().collect()
    }
}

/// Asserts that `text` (the stream `name`) holds `needle`, or does not.
#[track_caller]
fn holds(name: &str, text: &str, needle: &str, want: bool) {
    assert_eq!(
        text.contains(needle),
        want,
        "{needle:?} in {name} should be {want}; {name}:\n{text}"
    );
}

/// `aep` with a clean environment for what it reads: no `AEP_*`, no colour, and the
/// per-user state (the epoch store) in [`state_dir`], never the user's own.
pub fn aep() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_aep"));
    for var in ["AEP_URL", "AEP_TOKEN", "AEP_PORT", "AEP_HOST", "AEP_BUFFER"] {
        cmd.env_remove(var);
    }
    cmd.env("NO_COLOR", "1");
    cmd.env("AEP_STATE_DIR", state_dir());
    cmd
}

/// Where the tests' runs of `aep` keep per-user state: in Cargo's scratch directory for
/// integration tests, shared by the tests of one build (their sessions differ).
pub fn state_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("aep-cli-state")
}

/// Runs `aep ARGS` with `stdin`, killing it past `deadline`.
pub fn run_with(args: &[&str], stdin: &[u8], deadline: Duration) -> Run {
    let mut cmd = aep();
    cmd.args(args);
    finish(spawn(cmd), stdin, deadline)
}

/// Runs `aep ARGS` with empty stdin and a 60 s deadline.
pub fn run(args: &[&str]) -> Run {
    run_with(args, b"", Duration::from_secs(60))
}

/// Starts `cmd` with every stream piped.
pub fn spawn(mut cmd: Command) -> Child {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start aep")
}

/// Feeds `stdin`, waits at most `deadline`, and collects both streams.
pub fn finish(mut child: Child, stdin: &[u8], deadline: Duration) -> Run {
    let input = child.stdin.take();
    let bytes = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        if let Some(mut input) = input {
            let _ = input.write_all(&bytes);
        }
    });
    // a stream the caller took already reads as empty
    let reader = |r: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut s = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut s);
            }
            String::from_utf8_lossy(&s).into_owned()
        })
    };
    let out = reader(
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    );
    let err = reader(
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    );
    let end = Instant::now() + deadline;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if Instant::now() > end {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "aep still running after {deadline:?}; stderr so far:\n{}",
                err.join().unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let _ = writer.join();
    Run {
        status,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    }
}

/// A relay with the test token.
pub fn relay() -> ThreadRelay {
    relay_with(Relay::builder().token(TOKEN))
}

/// A relay as `builder` configures it.
pub fn relay_with(builder: aep::relay::RelayBuilder) -> ThreadRelay {
    ThreadRelay::start_with(builder).expect("start the embedded relay")
}

/// Everything the relay at `url` holds, through one history pass.
pub fn history(url: &str) -> Vec<Event> {
    let sub = aep::blocking::Client::new(url)
        .token(TOKEN)
        .subscribe(SubscribeOptions::new().from_all().history_only())
        .expect("subscribe");
    sub.collect()
}

/// The workspace's fixture corpus.
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}

/// A scratch directory removed on drop.
pub fn scratch() -> tempfile::TempDir {
    tempfile::tempdir().expect("a scratch directory")
}

/// A JSONL file of `lines` in `dir`.
pub fn jsonl(dir: &Path, name: &str, lines: &[String]) -> PathBuf {
    let path = dir.join(name);
    let mut text = lines.join("\n");
    text.push('\n');
    std::fs::write(&path, text).expect("write the JSONL file");
    path
}

/// A scratch directory holding one JSONL file of `lines` named `name`.
pub fn scratch_jsonl(name: &str, lines: &[String]) -> (tempfile::TempDir, PathBuf) {
    let dir = scratch();
    let path = jsonl(dir.path(), name, lines);
    (dir, path)
}

/// A session-scoped event line: `session`, `seq`, in epoch 0, with a fixed source.
pub fn line(id: &str, ty: &str, session: &str, seq: u64, data: serde_json::Value) -> String {
    serde_json::json!({
        "aep": "0.1", "id": id, "type": ty, "time": "2026-07-03T10:00:00.000Z",
        "source": format!("aep://test/agent/cli/session/{session}"), "agent": "cli",
        "session": session, "seq": seq, "data": data,
    })
    .to_string()
}

/// Emits `n` events into `session` of the relay at `url` (a `session.started`, then
/// `tool.requested`s), through the SDK's blocking HTTP emitter; returns their ids.
pub fn seed(url: &str, session: &str, n: usize) -> Vec<String> {
    use aep::blocking::{Client, Emitter, HttpSinkOptions};
    let sink = Client::new(url)
        .token(TOKEN)
        .http_sink(HttpSinkOptions::new())
        .expect("sink");
    let emitter = Emitter::new("seeder", "test", sink);
    let s = emitter.session(session);
    let mut ids = Vec::new();
    for i in 0..n {
        let e = if i == 0 {
            s.emit("session.started", serde_json::json!({}))
        } else {
            s.emit(
                "tool.requested",
                serde_json::json!({"tool": {"name": format!("t{i}")}}),
            )
        };
        ids.push(e.expect("emit").id().to_owned());
    }
    emitter.close().expect("delivered");
    ids
}

/// The URL of a relay that is not there any more (started, then stopped: its port
/// refuses connections).
pub fn dead_relay_url() -> String {
    let relay = relay();
    let url = relay.url().to_owned();
    relay.shutdown().expect("stop the relay");
    url
}

/// A server on `127.0.0.1:0` that reads each request and answers it with `answer`, or
/// never answers at all (`None`): the connection is accepted, read, and held open.
pub fn scripted_relay(answer: Option<&'static [u8]>) -> String {
    scripted_relay_by(move |_| answer)
}

/// [`scripted_relay`] answering each request by what `answer` makes of its first read:
/// the bytes to send and close, or `None` to read on and answer nothing, as a wedged
/// relay.
pub fn scripted_relay_by(
    answer: impl Fn(&[u8]) -> Option<&'static [u8]> + Send + Sync + 'static,
) -> String {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let answer = std::sync::Arc::new(answer);
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { break };
            let answer = answer.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 64 * 1024];
                let Ok(n) = conn.read(&mut buf) else { return };
                match answer(&buf[..n]) {
                    Some(bytes) => {
                        let _ = conn.write_all(bytes);
                    }
                    None => while matches!(conn.read(&mut buf), Ok(n) if n > 0) {},
                }
            });
        }
    });
    url
}

/// Sends SIGTERM to a child (a supervisor's stop), where there is one.
pub fn terminate(child: &Child) {
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill -TERM");
    assert!(status.success());
}

/// Parses every stdout line as an event.
pub fn events(stdout: &str) -> Vec<Event> {
    stdout
        .lines()
        .map(|l| l.parse::<Event>().unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

/// The ids of the events on stdout, in order.
pub fn event_ids(stdout: &str) -> Vec<String> {
    events(stdout).iter().map(|e| e.id().to_owned()).collect()
}

/// The lines of a child's stream as they come, read on a thread of their own.
pub fn line_channel(stream: impl Read + Send + 'static) -> std::sync::mpsc::Receiver<String> {
    use std::io::BufRead;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stream).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// An agent holding one session over the WebSocket sink, deciding commands as a test
/// needs: `control.pause`, `control.cancel` and `control.attention.respond` accepted,
/// `control.resume` rejected `refused`, `control.x.hang` held past any short window.
/// Every command it saw is kept.
pub struct Agent {
    pub seen: std::sync::Arc<std::sync::Mutex<Vec<Event>>>,
    emitter: aep::blocking::Emitter,
    // the target acks through this session only while it lives
    _session: aep::blocking::SessionEmitter,
}

impl Agent {
    /// Starts the agent and waits until the relay routes `session` to it.
    pub fn start(url: &str, session: &str) -> Agent {
        use aep::blocking::control::{ControlTarget, RejectReason};
        use aep::blocking::{Client, Emitter, WsSinkOptions};
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = seen.clone();
        let accepts = [
            "control.pause",
            "control.resume",
            "control.cancel",
            "control.attention.respond",
            "control.x.hang",
        ];
        let target = ControlTarget::new(accepts, move |cmd| {
            log.lock().unwrap().push(cmd.event().clone());
            match cmd.command_type() {
                "control.resume" => {
                    let _ = cmd.reject(RejectReason::Refused, "not paused");
                }
                "control.x.hang" => std::thread::sleep(Duration::from_secs(3)),
                _ => {
                    let _ = cmd.accept();
                }
            }
        })
        .expect("control target");
        let sink = Client::new(url)
            .token(TOKEN)
            .ws_sink(WsSinkOptions::new("test-agent", "test/1").command_hook(target.clone()))
            .expect("ws sink");
        let emitter = Emitter::new("test-agent", "test", sink);
        let s = target.attach(emitter.session(session));
        s.emit("session.started", serde_json::json!({}))
            .expect("emit");
        emitter.flush().expect("flush");
        Agent {
            seen,
            emitter,
            _session: s,
        }
    }

    /// The commands it received, in order.
    pub fn commands(&self) -> Vec<Event> {
        self.seen.lock().unwrap().clone()
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.emitter.close();
    }
}

/// Waits until `check` holds, polling; panics with `what` after `deadline`.
pub fn eventually(what: &str, deadline: Duration, mut check: impl FnMut() -> bool) {
    let end = Instant::now() + deadline;
    while !check() {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The non-empty lines of a file (none when it does not exist).
pub fn file_lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

/// `aep relay --port 0 --host 127.0.0.1 ARGS` as a child process, its address read from
/// its first stdout line and its stderr drained as it comes (a full pipe would stall
/// it); killed when dropped unless [`AepRelay::stop`] ended it.
pub struct AepRelay {
    child: Option<Child>,
    stderr: Option<std::thread::JoinHandle<String>>,
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    /// The first line it printed.
    pub first_line: String,
}

impl AepRelay {
    /// Starts it with `args` and `env` (each `(name, value)`), logs at `warn`.
    pub fn start(args: &[&str], env: &[(&str, &str)]) -> AepRelay {
        let mut cmd = aep();
        // a later `--host` in `args` wins (the last of a repeated flag does)
        cmd.args(["relay", "--port", "0", "--host", "127.0.0.1"])
            .args(args)
            .env("RUST_LOG", "warn");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = spawn(cmd);
        let mut err = child.stderr.take().expect("stderr");
        let stderr = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = err.read_to_string(&mut s);
            s
        });
        let lines = line_channel(child.stdout.take().expect("stdout"));
        let first_line = lines
            .recv_timeout(Duration::from_secs(60))
            .expect("aep relay prints its address");
        let url = first_line
            .split_whitespace()
            .find(|w| w.starts_with("http://") || w.starts_with("https://"))
            .unwrap_or_else(|| panic!("an address in {first_line:?}"))
            .to_owned();
        AepRelay {
            child: Some(child),
            stderr: Some(stderr),
            url,
            first_line,
        }
    }

    /// SIGTERM, then its exit and its stderr (stdout past the first line is not kept).
    pub fn stop(mut self) -> Run {
        let child = self.child.take().expect("running");
        terminate(&child);
        let run = finish(child, b"", Duration::from_secs(30));
        Run {
            stderr: self
                .stderr
                .take()
                .and_then(|h| h.join().ok())
                .unwrap_or_default(),
            ..run
        }
    }
}

impl Drop for AepRelay {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
