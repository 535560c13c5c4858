//! The relay's command line (feature `cli`): one definition of its flags and
//! environment variables, which the `aep-relay` binary and `aep relay` both use, and
//! the start-up both run.
//!
//! Every flag falls back to its environment variable (the reference relay's where it
//! has one), then to its default; values are parsed by [`RelayConfig::set`], so a bad
//! one is refused before anything starts.
//!
//! ```
//! use clap::Parser;
//!
//! #[derive(Parser)]
//! struct Cli {
//!     #[command(flatten)]
//!     relay: aep_relay::cli::RelayArgs,
//! }
//!
//! let cli = Cli::try_parse_from(["relay", "--port", "0", "--buffer", "8"])?;
//! let config = cli.relay.config()?;
//! assert_eq!((config.addr().port(), config.buffer()), (0, 8));
//! assert!(Cli::try_parse_from(["relay", "--buffer", "many"]).is_err());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;
use std::future::Future;
use std::io::{IsTerminal, Write};

use clap::parser::ValueSource;
use clap::{Arg, ArgMatches, Args, Command, FromArgMatches};

use crate::config::{Setting, SETTINGS};
use crate::{ConfigError, RelayConfig, Server};

/// The relay's flags, one per setting, each with its `AEP_*` variable; flatten it into
/// a clap command (`#[command(flatten)]`). `Debug` shows what was given, the token as
/// `<redacted>`.
///
/// ```
/// use clap::Parser;
///
/// #[derive(Parser)]
/// struct Cli {
///     #[command(flatten)]
///     relay: aep_relay::cli::RelayArgs,
/// }
///
/// let cli = Cli::try_parse_from(["relay", "--token", "s3cret", "--max-batch", "50"])?;
/// assert!(!format!("{:?}", cli.relay).contains("s3cret"));
/// assert_eq!(cli.relay.config()?.max_batch(), 50);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Default)]
pub struct RelayArgs {
    /// (setting, value, whether it came from the environment), in table order.
    given: Vec<(&'static Setting, String, bool)>,
}

impl fmt::Debug for RelayArgs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut m = f.debug_map();
        for (s, value, _) in &self.given {
            if s.flag == "token" {
                m.entry(&s.flag, &"<redacted>");
            } else {
                m.entry(&s.flag, value);
            }
        }
        m.finish()
    }
}

impl RelayArgs {
    /// The configuration: the defaults (with the web console on: `--console off` turns
    /// it off), overridden by each flag or variable given. A value clap let through is
    /// checked again here, so an error names the flag, or the variable it came from.
    ///
    /// ```
    /// use clap::Parser;
    ///
    /// #[derive(Parser)]
    /// struct Cli {
    ///     #[command(flatten)]
    ///     relay: aep_relay::cli::RelayArgs,
    /// }
    ///
    /// let config = Cli::try_parse_from(["relay", "--fsync", "always"])?.relay.config()?;
    /// assert_eq!(config.fsync(), aep_relay::Fsync::Always);
    /// assert_eq!(config.buffer(), aep_relay::RelayConfig::default().buffer());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn config(&self) -> Result<RelayConfig, ConfigError> {
        // a relay binary serves mission control unless told not to (issue 35); an
        // embedded Relay turns it on with its builder
        let mut config = RelayConfig::for_binaries();
        for (s, value, from_env) in &self.given {
            let name = if *from_env {
                s.env.to_owned()
            } else {
                format!("--{}", s.flag)
            };
            config.set(&name, value)?;
        }
        Ok(config)
    }
}

impl FromArgMatches for RelayArgs {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        let mut args = RelayArgs::default();
        args.update_from_arg_matches(matches)?;
        Ok(args)
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        for s in SETTINGS {
            if let Some(value) = matches.get_one::<String>(s.flag) {
                let from_env = matches.value_source(s.flag) == Some(ValueSource::EnvVariable);
                self.given.retain(|(g, _, _)| g.flag != s.flag);
                self.given.push((s, value.clone(), from_env));
            }
        }
        Ok(())
    }
}

impl Args for RelayArgs {
    fn augment_args(cmd: Command) -> Command {
        SETTINGS.iter().fold(cmd, |cmd, s| {
            let flag = s.flag;
            let arg = Arg::new(flag).long(flag).env(s.env);
            // a switch stands alone (`--insecure-open-relay`), or says `=false`
            let arg = if s.is_switch() {
                arg.num_args(0..=1)
                    .require_equals(true)
                    .default_missing_value("true")
                    .value_name("BOOL")
            } else {
                arg.value_name(s.value)
            };
            cmd.arg(
                arg.help(s.help)
                    // the secret stays out of --help
                    .hide_env_values(flag == "token")
                    // the last of a repeated flag wins, so a script can append to a
                    // list of defaults
                    .overrides_with(flag)
                    // refused by the one parser of every setting, as clap's usage error
                    .value_parser(move |v: &str| {
                        RelayConfig::default()
                            .set(flag, v)
                            .map(|()| v.to_owned())
                            .map_err(|e| e.to_string())
                    }),
            )
        })
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        RelayArgs::augment_args(cmd)
    }
}

/// What `--help` of a relay binary says after the flags.
///
/// ```
/// #[derive(clap::Parser)]
/// #[command(after_help = aep_relay::cli::AFTER_HELP)]
/// struct Cli {
///     #[command(flatten)]
///     relay: aep_relay::cli::RelayArgs,
/// }
/// ```
pub const AFTER_HELP: &str = "\
The first line of stdout is `PROGRAM listening on http://ADDR ...` (https:// with --tls-cert;
so --port 0 is usable). It listens on 127.0.0.1 unless --host says otherwise; beyond loopback
it refuses to start without --token (or the loud --insecure-open-relay).
Logs go to stderr through tracing (RUST_LOG, default info). The token is never logged.
SIGHUP reads --tls-cert and --tls-key again (open connections keep theirs).
SIGINT or SIGTERM drains the connections (up to --drain-timeout-ms) and exits 0.";

/// Logs to stderr through `tracing` (`RUST_LOG`, default `info`), coloured only on a
/// terminal. Call it once, before [`serve`]; a later call leaves the first in place.
///
/// ```
/// aep_relay::cli::init_logging();
/// tracing::info!("logged to stderr");
/// ```
pub fn init_logging() {
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        // colours for a terminal only: a log file keeps plain `key=value` text
        .with_ansi(std::io::stderr().is_terminal())
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .try_init();
}

/// Binds, refuses an address beyond loopback without a token (unless
/// `--insecure-open-relay`), reads the TLS files, opens the store (reading a journal
/// first, so a relay that says it listens can serve), prints `{program} listening on
/// http://ADDR (buffer N/session, auth ..)` (`https://` with TLS) as the first line of
/// stdout, and serves until `shutdown` resolves, reading the TLS files again on
/// `SIGHUP`.
///
/// ```no_run
/// # async fn run() -> std::io::Result<()> {
/// let config = aep_relay::RelayConfig::default().with_token("t");
/// aep_relay::cli::serve(config, "my-relay", aep_relay::cli::shutdown_signal()).await
/// # }
/// ```
pub async fn serve(
    config: RelayConfig,
    program: &str,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(config.addr()).await?;
    let addr = listener.local_addr()?;
    // refused before the store opens (a journal read, a NATS connection) for nothing
    crate::exposure::Posture::of(&config).check(addr)?;
    let buffer = config.buffer();
    let auth = if config.token().is_some() {
        "on"
    } else {
        "OFF, control routing disabled (AEP-0004 §4.1); set AEP_TOKEN to enable"
    };
    let scheme = if config.tls().is_some() {
        "https"
    } else {
        "http"
    };
    let server_console = config.console();
    let server = tokio::task::spawn_blocking(move || Server::open(config))
        .await
        .map_err(std::io::Error::other)??;
    if let Some(reloader) = server.tls_reloader() {
        reload_on_hangup(reloader);
    }
    let console = if server_console {
        ", console at /console"
    } else {
        ""
    };
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{program} listening on {scheme}://{addr} (buffer {buffer}/session, auth {auth}{console})"
    )?;
    out.flush()?;
    drop(out);
    server.run(listener, shutdown).await
}

/// Reads the TLS files again on each `SIGHUP` for as long as the process runs: the
/// handshakes after it take the new certificate, the connections open keep theirs; files
/// that cannot be used are logged and the certificate served stays.
fn reload_on_hangup(reloader: crate::TlsReloader) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut hangups = match signal(SignalKind::hangup()) {
            Ok(hangups) => hangups,
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen for SIGHUP: the TLS files are read at start only");
                return;
            }
        };
        tokio::spawn(async move {
            while hangups.recv().await.is_some() {
                let files = reloader.files();
                let (cert, key) = (files.cert().display(), files.key().display());
                match reloader.reload() {
                    Ok(()) => {
                        tracing::info!(%cert, %key, "SIGHUP: TLS certificate and key read again; new connections get them")
                    }
                    Err(e) => {
                        tracing::error!(error = %e, "SIGHUP: the TLS files cannot be used; still serving the certificate read before")
                    }
                }
            }
        });
    }
    #[cfg(not(unix))]
    let _ = reloader;
}

/// Resolves on SIGINT or SIGTERM (SIGINT alone where there is no SIGTERM): the
/// `shutdown` of [`serve`].
///
/// ```no_run
/// # async fn run() {
/// aep_relay::cli::shutdown_signal().await;
/// eprintln!("asked to stop: draining");
/// # }
/// ```
pub async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // a test: a panic is the failure report

    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        relay: RelayArgs,
    }

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("relay").chain(args.iter().copied()))
    }

    #[test]
    fn one_flag_per_setting_each_with_its_variable() {
        let cmd = <Cli as clap::CommandFactory>::command();
        for s in SETTINGS {
            let arg = cmd
                .get_arguments()
                .find(|a| a.get_long() == Some(s.flag))
                .unwrap_or_else(|| panic!("--{}", s.flag));
            assert_eq!(
                arg.get_env(),
                Some(std::ffi::OsStr::new(s.env)),
                "{}",
                s.flag
            );
        }
    }

    #[test]
    fn flags_set_the_config_and_the_last_repeat_wins() {
        let cli = parse(&[
            "--port",
            "0",
            "--buffer",
            "8",
            "--buffer",
            "9",
            "--fsync=never",
        ])
        .unwrap();
        let config = cli.relay.config().unwrap();
        assert_eq!((config.addr().port(), config.buffer()), (0, 9));
        assert_eq!(config.fsync(), crate::config::Fsync::Never);
    }

    #[test]
    fn a_bad_value_is_a_usage_error_naming_the_flag() {
        let e = parse(&["--max-body", "lots"]).unwrap_err();
        assert_eq!(e.kind(), clap::error::ErrorKind::ValueValidation);
        assert!(e.to_string().contains("--max-body"), "{e}");
        assert!(parse(&["--fsync", "sometimes"]).is_err());
        assert!(parse(&["--no-such-flag", "1"]).is_err());
    }

    /// A switch stands alone or says `=false`; it never takes the next argument.
    #[test]
    fn a_switch_stands_alone() {
        let open = |args: &[&str]| parse(args).unwrap().relay.config().unwrap();
        assert!(!open(&[]).insecure_open_relay());
        assert!(open(&["--insecure-open-relay"]).insecure_open_relay());
        assert!(open(&["--insecure-open-relay", "--port", "0"]).insecure_open_relay());
        assert!(!open(&["--insecure-open-relay=false"]).insecure_open_relay());
        assert!(parse(&["--insecure-open-relay=maybe"]).is_err());
        // `--insecure-open-relay 1` would read `1` as a stray argument
        assert!(parse(&["--insecure-open-relay", "1"]).is_err());
    }

    #[test]
    fn a_relay_binary_serves_the_console_unless_told_not_to() {
        assert!(parse(&[]).unwrap().relay.config().unwrap().console());
        let off = parse(&["--console", "off"]).unwrap();
        assert!(!off.relay.config().unwrap().console());
        // an embedded relay's default stays off
        assert!(!RelayConfig::default().console());
    }

    #[test]
    fn debug_never_shows_the_token() {
        let cli = parse(&["--token", "s3cret", "--buffer", "4"]).unwrap();
        let shown = format!("{:?}", cli.relay);
        assert!(
            !shown.contains("s3cret") && shown.contains("<redacted>"),
            "{shown}"
        );
        assert_eq!(
            cli.relay.config().unwrap().token().map(|t| t.expose()),
            Some("s3cret")
        );
    }
}
