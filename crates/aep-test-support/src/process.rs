//! A relay as a process of its own (the `aep-relay` binary, or any program printing its
//! address first), for the tests and benches that kill one (`kill -9`) or weigh it (its
//! peak resident memory).
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
    /// Starts `command` (its stdio is taken over) and waits for the `http://` address on
    /// its first line of stdout; or says why there is none (it exited, or was silent for
    /// 30 s), with what it wrote on stderr.
    pub fn spawn(mut command: Command) -> Result<RelayProcess, String> {
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
        let line = address.recv_timeout(START_TIMEOUT).unwrap_or_default();
        match line.split_whitespace().find(|w| w.starts_with("http://")) {
            Some(url) => {
                relay.url = url.trim_end_matches('/').to_owned();
                Ok(relay)
            }
            None => {
                // a moment for its last words to reach the log
                std::thread::sleep(Duration::from_millis(100));
                let why = format!(
                    "the relay printed no address (first line {:?}); its stderr:\n{}",
                    line.trim(),
                    relay.log()
                );
                relay.kill();
                Err(why)
            }
        }
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
        if !self.is_running() {
            return;
        }
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .stderr(Stdio::null())
            .status();
        let deadline = Instant::now() + grace;
        while self.is_running() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        self.kill();
    }
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
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = text.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn a_program_that_prints_no_address_is_an_error_with_its_stderr() {
        let err = RelayProcess::spawn(shell("echo 'no flag --nats' >&2; exit 2")).unwrap_err();
        assert!(err.contains("no flag --nats"), "{err}");
    }
}
