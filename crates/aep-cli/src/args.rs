//! Flags shared by several subcommands, and the parsers of flag values.

use std::fmt;
use std::time::Duration;

use serde_json::Value;

/// Where the relay is and how to authenticate: every subcommand that talks to a relay
/// flattens this in.
#[derive(Debug, Clone, clap::Args)]
pub struct RelayArgs {
    /// The relay's base URL.
    #[arg(
        long,
        env = "AEP_URL",
        default_value = "http://127.0.0.1:8787",
        value_name = "URL"
    )]
    pub url: String,
    /// The relay's bearer token (never printed).
    #[arg(long, env = "AEP_TOKEN", hide_env_values = true, value_name = "TOKEN")]
    pub token: Option<Secret>,
    /// A PEM file of root certificates to trust besides the public ones: the private CA
    /// that signed the relay's certificate (`https://` relays).
    #[arg(long, env = "AEP_TLS_CA", value_name = "FILE", value_parser = tls_ca_file)]
    pub tls_ca: Option<TlsCa>,
}

impl RelayArgs {
    /// The token, if one was given.
    pub fn token(&self) -> Option<&str> {
        self.token.as_ref().map(Secret::expose)
    }

    /// The base URL without a trailing slash.
    pub fn base(&self) -> &str {
        self.url.trim_end_matches('/')
    }

    /// The SDK's client of the relay, with the token: what every connection is opened
    /// on.
    pub fn client(&self) -> aep::Client {
        let mut client = aep::Client::new(self.base());
        if let Some(ca) = &self.tls_ca {
            // Parsed the same way when the flag was read (`tls_ca_file`): cannot fail
            // here; were it to, the connection would say the certificate is untrusted.
            if let Ok(c) = client.clone().tls_ca_pem(&ca.pem) {
                client = c;
            }
        }
        match self.token() {
            Some(t) => client.token(t),
            None => client,
        }
    }

    /// A builder of the HTTP clients `aep` makes itself (discovery, `doctor`, the hook
    /// spool), trusting `--tls-ca` as [`RelayArgs::client`] does.
    pub fn http_builder(&self) -> reqwest::ClientBuilder {
        let mut builder = reqwest::Client::builder();
        if let Some(ca) = &self.tls_ca {
            for cert in reqwest::Certificate::from_pem_bundle(&ca.pem).unwrap_or_default() {
                builder = builder.add_root_certificate(cert);
            }
        }
        builder
    }
}

/// The roots of `--tls-ca`, read and checked when the flag is parsed.
#[derive(Clone)]
pub struct TlsCa {
    path: String,
    pem: Vec<u8>,
}

impl fmt::Debug for TlsCa {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsCa").field("path", &self.path).finish()
    }
}

/// `--tls-ca FILE`: a readable PEM file holding at least one certificate that can be a
/// root; otherwise a usage error naming the file and the reason.
pub fn tls_ca_file(path: &str) -> Result<TlsCa, String> {
    let pem = std::fs::read(path).map_err(|e| format!("cannot read {path}: {e}"))?;
    aep::Client::new("https://localhost")
        .tls_ca_pem(&pem)
        .map(drop)
        .map_err(|e| format!("{path}: {e}"))?;
    Ok(TlsCa {
        path: path.to_owned(),
        pem,
    })
}

/// A secret from the command line or the environment: its `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// The secret itself, for the one place that must send it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

impl std::str::FromStr for Secret {
    type Err = std::convert::Infallible;
    fn from_str(s: &str) -> Result<Secret, Self::Err> {
        Ok(Secret(s.to_owned()))
    }
}

/// A JSON value given on the command line (`--data`, `--values`).
pub fn json(text: &str) -> Result<Value, String> {
    serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))
}

/// A JSON object given on the command line.
pub fn json_object(text: &str) -> Result<Value, String> {
    match json(text)? {
        v @ Value::Object(_) => Ok(v),
        // the value as written says what it is: `[1]`, `"x"`, `null`
        other => Err(format!("must be a JSON object {{..}}, not `{other}`")),
    }
}

/// Milliseconds, as `--ack-window 10000` takes them.
pub fn millis(text: &str) -> Result<Duration, String> {
    text.trim()
        .parse::<u64>()
        .map(Duration::from_millis)
        .map_err(|_| format!("`{text}` is not a number of milliseconds"))
}

/// The output of a subcommand that prints events or state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// One JSON document per line (the default when stdout is not a terminal).
    Json,
    /// Text for people (the default on a terminal).
    Text,
}

impl Format {
    /// The format asked for, or the default for where stdout goes.
    pub fn or_default(asked: Option<Format>) -> Format {
        asked.unwrap_or(if crate::term::stdout_is_terminal() {
            Format::Text
        } else {
            Format::Json
        })
    }
}
