//! A relay as a process of its own (the `aep-relay` binary, or any program printing its
//! address first), for the tests and benches that kill one (`kill -9`) or weigh it (its
//! peak resident memory, [`peak_rss_kib`]; its resident memory now, [`rss_kib`]; the CPU
//! time it used, [`cpu_secs`]).
//!
//! The relay picks its port (`--port 0`) and names it on the first line of its stdout;
//! [`RelayProcess::spawn`] waits for that line, so nothing binds a port, releases it and
//! hands it on. Its stderr is kept ([`RelayProcess::log`]) for a failing test to show.
//! Dropping it stops it with SIGTERM (a clean shutdown), then SIGKILL after 10 s.

use std::fmt;
use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a relay may take to print its address.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// A running relay process.
///
/// ```no_run
/// use std::process::Command;
/// use aep_test_support::process::RelayProcess;
/// let mut command = Command::new("aep-relay");
/// command.args(["--port", "0", "--host", "127.0.0.1", "--token", "t"]);
/// let mut relay = RelayProcess::spawn(command).unwrap();
/// println!("{} peaks at {:?} KiB", relay.url(), relay.peak_rss_kib());
/// relay.kill(); // kill -9: no shutdown, connections cut
/// ```
pub struct RelayProcess {
    child: Child,
    url: String,
    log: Arc<Mutex<String>>,
}

impl fmt::Debug for RelayProcess {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RelayProcess")
            .field("pid", &self.child.id())
            .field("url", &self.url)
            .finish()
    }
}

impl RelayProcess {
    /// Starts `command` (its stdio is taken over) and waits for the `http://` (or
    /// `https://`) address on
    /// its first line of stdout; or says why there is none (it exited, or was silent for
    /// 30 s), with what it wrote on stderr.
    pub fn spawn(command: Command) -> Result<RelayProcess, String> {
        RelayProcess::spawn_within(command, START_TIMEOUT)
    }

    /// [`RelayProcess::spawn`], waiting `timeout` for the address.
    fn spawn_within(mut command: Command, timeout: Duration) -> Result<RelayProcess, String> {
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command
            .spawn()
            .map_err(|e| format!("starting {:?}: {e}", command.get_program()))?;
        let log = Arc::new(Mutex::new(String::new()));
        if let Some(stderr) = child.stderr.take() {
            let log = Arc::clone(&log);
            std::thread::spawn(move || {
                let mut lines = BufReader::new(stderr);
                let mut line = String::new();
                while matches!(lines.read_line(&mut line), Ok(n) if n > 0) {
                    log.lock().unwrap().push_str(&line);
                    line.clear();
                }
            });
        }
        let (first, address) = mpsc::channel();
        if let Some(stdout) = child.stdout.take() {
            std::thread::spawn(move || {
                let mut out = BufReader::new(stdout);
                let mut line = String::new();
                let _ = out.read_line(&mut line);
                let _ = first.send(line);
                // drained to the end, so a relay writing more never blocks on a full pipe
                let _ = std::io::copy(&mut out.take(u64::MAX), &mut std::io::sink());
            });
        }
        let mut relay = RelayProcess {
            child,
            url: String::new(),
            log,
        };
        let first = address.recv_timeout(timeout);
        let url = first.as_deref().ok().and_then(|line| {
            line.split_whitespace()
                .find(|w| w.starts_with("http://") || w.starts_with("https://"))
        });
        if let Some(url) = url {
            relay.url = url.trim_end_matches('/').to_owned();
            return Ok(relay);
        }
        // a moment for its last words to reach the log
        std::thread::sleep(Duration::from_millis(100));
        let what = match &first {
            Ok(line) if !line.is_empty() => {
                format!("its first line names no http:// address: {:?}", line.trim())
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                format!("it printed nothing on stdout within {timeout:?}")
            }
            _ => match relay.child.try_wait() {
                Ok(Some(status)) => format!("it exited ({status}) before printing its address"),
                _ => "it closed its stdout before printing its address".to_owned(),
            },
        };
        let why = format!(
            "the relay did not start: {what}; its stderr:\n{}",
            relay.log()
        );
        relay.kill();
        Err(why)
    }

    /// `http://127.0.0.1:PORT`
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// What it wrote on stderr so far.
    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// Whether it still runs.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Sends it `SIGHUP` (a relay reads its TLS files again).
    pub fn hangup(&self) {
        let _ = Command::new("kill")
            .args(["-HUP", &self.child.id().to_string()])
            .stderr(Stdio::null())
            .status();
    }

    /// Its peak resident set in KiB (`VmHWM`), while it runs (Linux).
    pub fn peak_rss_kib(&self) -> Option<u64> {
        peak_rss_kib(self.child.id())
    }

    /// Kills it with SIGKILL, as a crash (`kill -9`), and reaps it. Idempotent.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Stops it with SIGTERM (a clean shutdown), SIGKILL if it has not exited within
    /// `grace`.
    pub fn terminate(&mut self, grace: Duration) {
        terminate(&mut self.child, grace);
    }
}

/// Stops `child` with SIGTERM (a clean shutdown), SIGKILL if it has not exited within
/// `grace`, and reaps it. Nothing if it has exited.
pub fn terminate(child: &mut Child, grace: Duration) {
    let running = |child: &mut Child| matches!(child.try_wait(), Ok(None));
    if running(child) {
        let _ = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .stderr(Stdio::null())
            .status();
        let deadline = Instant::now() + grace;
        while running(child) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}

impl Drop for RelayProcess {
    fn drop(&mut self) {
        self.terminate(Duration::from_secs(10));
    }
}

/// The peak resident set of process `pid` in KiB (`VmHWM` of `/proc/PID/status`), where
/// there is one (Linux, the process alive).
///
/// ```
/// let mine = aep_test_support::process::peak_rss_kib(std::process::id());
/// assert!(cfg!(not(target_os = "linux")) || mine.is_some_and(|k| k > 0));
/// ```
pub fn peak_rss_kib(pid: u32) -> Option<u64> {
    status_kib(pid, "VmHWM:")
}

/// The resident set of process `pid` now, in KiB (`VmRSS` of `/proc/PID/status`), where
/// there is one (Linux, the process alive).
///
/// ```
/// use aep_test_support::process::{peak_rss_kib, rss_kib};
/// let me = std::process::id();
/// if let (Some(now), Some(peak)) = (rss_kib(me), peak_rss_kib(me)) {
///     assert!(0 < now && now <= peak);
/// }
/// ```
pub fn rss_kib(pid: u32) -> Option<u64> {
    status_kib(pid, "VmRSS:")
}

fn status_kib(pid: u32, key: &str) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = text.lines().find(|l| l.starts_with(key))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The CPU seconds (user and system) process `pid` has used so far, from
/// `/proc/PID/stat` (Linux; 0 where there is none). A bench reads it before and after
/// what it measures.
///
/// ```
/// use aep_test_support::process::cpu_secs;
/// use std::time::{Duration, Instant};
/// let me = std::process::id();
/// let (before, deadline) = (cpu_secs(me), Instant::now() + Duration::from_secs(30));
/// // busy until this process has used a twentieth of a second more
/// while cpu_secs(me) < before + 0.05 && Instant::now() < deadline {
///     std::hint::black_box((0..100_000u64).sum::<u64>());
/// }
/// assert!(cfg!(not(target_os = "linux")) || cpu_secs(me) >= before + 0.05);
/// ```
pub fn cpu_secs(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // the fields after the command's closing parenthesis (the command may hold spaces);
    // utime and stime, fields 14 and 15, are the 12th and 13th of those
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // in clock ticks, 1/100 s on Linux (USER_HZ)
    (ticks(11) + ticks(12)) / 100.0
}

/// A server as a child process on a port it chose and wrote down somewhere (nats-server
/// its ports file, the reference relay a hook's file), started again on that port:
/// [`crate::nats::NatsServer`] and [`crate::reference::ReferenceRelay`] are each one.
#[derive(Debug, Default)]
pub struct ServerChild {
    child: Option<Child>,
    port: u16,
}

/// Why [`ServerChild::launch`] has no server listening.
#[derive(Debug)]
pub enum LaunchError {
    /// The program could not be started.
    Spawn(std::io::Error),
    /// It exited before naming its port.
    Exited(std::process::ExitStatus),
    /// It named no port within the time allowed; it was killed.
    TimedOut(Duration),
}

impl fmt::Display for LaunchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LaunchError::Spawn(e) => write!(f, "it could not be started: {e}"),
            LaunchError::Exited(status) => write!(f, "it exited ({status}) before listening"),
            LaunchError::TimedOut(d) => write!(f, "it named no port within {} s", d.as_secs()),
        }
    }
}

impl ServerChild {
    /// Kills what runs, starts `command`, and polls `port` (given the new process's id)
    /// every 20 ms until it names the port the server listens on, the process exits, or
    /// `timeout` passes (the process is then killed).
    pub fn launch(
        &mut self,
        command: &mut Command,
        timeout: Duration,
        mut port: impl FnMut(u32) -> Option<u16>,
    ) -> Result<u16, LaunchError> {
        self.kill();
        let child = command.spawn().map_err(LaunchError::Spawn)?;
        let pid = child.id();
        self.child = Some(child);
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(p) = port(pid) {
                self.port = p;
                return Ok(p);
            }
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                self.child = None;
                return Err(LaunchError::Exited(status));
            }
            if Instant::now() > deadline {
                self.kill();
                return Err(LaunchError::TimedOut(timeout));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The port it listens on (kept across restarts; 0 before the first launch).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Its process id while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Whether it runs (launched, and has not exited).
    pub fn is_running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }

    /// Kills it (SIGKILL, as a crash) and reaps it. Idempotent.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Stops it with SIGTERM, SIGKILL if it has not exited within `grace`.
    pub fn terminate(&mut self, grace: Duration) {
        if let Some(mut child) = self.child.take() {
            terminate(&mut child, grace);
        }
    }
}

impl Drop for ServerChild {
    fn drop(&mut self) {
        self.kill();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn shell(script: &str) -> Command {
        let mut c = Command::new("sh");
        c.args(["-c", script]);
        c
    }

    #[test]
    fn the_address_is_read_off_the_first_line_and_stderr_is_kept() {
        let mut relay = RelayProcess::spawn(shell(
            "echo oops >&2; echo 'listening on http://127.0.0.1:9/ now'; exec sleep 30",
        ))
        .unwrap();
        assert_eq!(relay.url(), "http://127.0.0.1:9");
        assert!(relay.is_running());
        crate::wait::until_blocking("its stderr", || relay.log().contains("oops"));
        relay.kill();
        assert!(!relay.is_running());
    }

    #[test]
    fn a_program_that_exits_at_once_is_an_error_with_its_status_and_stderr() {
        let err = RelayProcess::spawn(shell("echo 'no flag --nats' >&2; exit 2")).unwrap_err();
        assert!(err.contains("no flag --nats"), "{err}");
        assert!(err.contains("exited (exit status: 2)"), "{err}");
    }

    #[test]
    fn a_first_line_without_an_address_is_an_error_and_the_program_is_stopped() {
        let started = Instant::now();
        let err = RelayProcess::spawn(shell("echo starting; exec sleep 60")).unwrap_err();
        assert!(err.contains(r#"no http:// address: "starting""#), "{err}");
        // stopped with `kill -9`, not left to sleep its minute out
        assert!(started.elapsed() < Duration::from_secs(10), "{err}");
    }

    #[test]
    fn a_silent_program_is_an_error_within_the_bound_with_its_stderr() {
        let started = Instant::now();
        let silent = shell("echo 'waiting for nothing' >&2; exec sleep 60");
        let err = RelayProcess::spawn_within(silent, Duration::from_millis(500)).unwrap_err();
        assert!(
            err.contains("printed nothing on stdout within 500ms"),
            "{err}"
        );
        assert!(err.contains("waiting for nothing"), "{err}");
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn dropping_it_stops_and_reaps_the_process() {
        let relay = RelayProcess::spawn(shell("echo http://127.0.0.1:9; exec sleep 60")).unwrap();
        let proc = format!("/proc/{}", relay.pid());
        assert!(cfg!(not(target_os = "linux")) || Path::new(&proc).exists());
        drop(relay);
        // reaped: no zombie left under its pid
        assert!(!Path::new(&proc).exists(), "{proc} is still there");
    }

    #[test]
    fn a_relay_deaf_to_sigterm_is_killed_after_the_grace() {
        // an ignored SIGTERM stays ignored across `exec`
        let mut relay = RelayProcess::spawn(shell(
            "trap '' TERM; echo http://127.0.0.1:9; exec sleep 60",
        ))
        .unwrap();
        let started = Instant::now();
        relay.terminate(Duration::from_millis(300));
        assert!(!relay.is_running());
        let took = started.elapsed();
        assert!(
            took >= Duration::from_millis(300),
            "it obeyed SIGTERM: {took:?}"
        );
        assert!(took < Duration::from_secs(10), "{took:?}");
    }

    #[test]
    fn a_server_child_names_its_port_and_keeps_it() {
        let mut server = ServerChild::default();
        let port = server
            .launch(&mut shell("exec sleep 30"), Duration::from_secs(5), |_| {
                Some(7)
            })
            .unwrap();
        assert_eq!((port, server.port()), (7, 7));
        assert!(server.is_running() && server.pid().is_some());
        server.kill();
        assert!(!server.is_running() && server.pid().is_none());
        assert_eq!(server.port(), 7);
    }

    #[test]
    fn a_server_child_that_exits_or_names_no_port_is_an_error() {
        let mut server = ServerChild::default();
        let exited = server.launch(&mut shell("exit 4"), Duration::from_secs(5), |_| None);
        assert!(matches!(exited, Err(LaunchError::Exited(s)) if s.code() == Some(4)));
        let silent = server.launch(
            &mut shell("exec sleep 30"),
            Duration::from_millis(100),
            |_| None,
        );
        assert!(
            matches!(silent, Err(LaunchError::TimedOut(_))),
            "{silent:?}"
        );
        // killed, not left running
        assert!(!server.is_running());
        let missing = server.launch(
            &mut Command::new("aep-test-no-such-program"),
            Duration::from_secs(1),
            |_| None,
        );
        assert!(matches!(missing, Err(LaunchError::Spawn(_))), "{missing:?}");
    }
}
