//! Exit codes scripts can rely on, and the one-line failure every subcommand ends with.

use std::fmt;
use std::process::ExitCode;

/// The exit codes of `aep`, one table for every subcommand (README, `aep --help`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// 0: done.
    Success = 0,
    /// 1: findings (`validate`, `doctor`; warnings alone do not count), or a `replay`
    /// aborted.
    Findings = 1,
    /// 2: usage: a flag, argument or filter that is not right.
    Usage = 2,
    /// 3: the command was nacked (by the target, or by the relay on its behalf).
    Nacked = 3,
    /// 4: no ack within the ack window (the synthesized `timeout`, AEP-0004 §3).
    Timeout = 4,
    /// 5: the relay is unreachable or refuses (network, 401, a 4xx on ingest).
    Relay = 5,
    /// 6: an input that cannot be read (a missing file, a line that is not an event),
    /// an output file that cannot be written, or an address `aep relay` cannot bind.
    Input = 6,
}

impl From<Exit> for ExitCode {
    fn from(exit: Exit) -> ExitCode {
        ExitCode::from(exit as u8)
    }
}

/// The table printed after `aep --help` and in the README.
pub const TABLE: &str = "\
Exit codes:
  0  success
  1  findings (validate, doctor: warnings alone do not count); a replay aborted
  2  usage: a bad flag, argument or filter
  3  the command was nacked (reason on stderr; a relay's no-route or ambiguous too)
  4  no ack within the ack window (timeout)
  5  the relay is unreachable or refusing (network, 401, a 4xx on ingest)
  6  an input that cannot be read (a missing file, a line that is not JSON),
     or a file that cannot be written (sink), an address the relay cannot bind";

/// Why a subcommand stopped: the exit code and one line for stderr, naming what and
/// where (file and line, URL and status). Never a debug dump.
#[derive(Debug)]
pub struct Failure {
    exit: Exit,
    message: String,
}

impl Failure {
    /// A failure with this exit code. A URL in the message loses its credentials
    /// (userinfo, `?token=`), here, where every failure is made.
    pub fn new(exit: Exit, message: impl Into<String>) -> Failure {
        let message = message.into();
        let message = match crate::term::redact_urls(&message) {
            std::borrow::Cow::Borrowed(_) => message,
            std::borrow::Cow::Owned(redacted) => redacted,
        };
        Failure { exit, message }
    }

    /// Exit 2.
    pub fn usage(message: impl Into<String>) -> Failure {
        Failure::new(Exit::Usage, message)
    }

    /// Exit 5.
    pub fn relay(message: impl Into<String>) -> Failure {
        Failure::new(Exit::Relay, message)
    }

    /// Exit 6.
    pub fn input(message: impl Into<String>) -> Failure {
        Failure::new(Exit::Input, message)
    }

    /// The exit code.
    pub fn exit(&self) -> Exit {
        self.exit
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// What a subcommand returns: the exit code it ended with, or why it failed.
pub type Outcome = Result<Exit, Failure>;

/// An error and its causes on one line (`what: why: root cause`), each cause once.
pub fn describe(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let c = cause.to_string();
        if !text.contains(&c) {
            text.push_str(": ");
            text.push_str(&c);
        }
        source = cause.source();
    }
    text
}
