//! The redaction pipeline and content digests (AEP-0003 §9.3, §9.4).
//!
//! Free text gated `redacted` (AEP-0002 §5.1) must pass the §9.4 pipeline before it
//! leaves an adapter, and an event may only claim `capture: redacted` when it has
//! (AEP-0001 §8.2(e)). The pipeline runs four rules, in the order the spec fixes:
//!
//! 1. **(a) secrets and credentials** become `[REDACTED:secret]`: PEM blocks, AWS access
//!    key ids, `Bearer` tokens, `password=…`-style assignments, JWTs, plus the hardening
//!    the conformance corpus pins beyond the floor (quoted and escaped assignments,
//!    lowercase `bearer`, well-known bare token shapes, URL credentials, `--token x`
//!    flags, credential-named object keys);
//! 2. **(b) configured names**: values the operator lists as secret, and keys the
//!    operator names as secret;
//! 3. **(c) home paths**: the operator's home directory and any `/home/<user>`,
//!    `/Users/<user>` or `C:\Users\<user>` prefix become `~`;
//! 4. **(d) PII**: e-mail addresses and phone numbers become `[REDACTED:pii]` (on by
//!    default, operator-disableable).
//!
//! Every pattern is a [`regex`] automaton, linear in the input: hostile text costs time
//! proportional to its length, never exponential backtracking.
//!
//! Digests (§9.3) are computed over the **original** content, before redaction: see
//! [`ContentDigest`] and [`canonical_json`].
//!
//! ```
//! use aep_core::redact::{RedactOptions, Redactor};
//!
//! let redactor = Redactor::new(RedactOptions::new().home("/home/op"))?;
//! let out = redactor.redact_text("cat /home/op/.env; export API_KEY=sk_live_abc123 # ops@example.com");
//! assert_eq!(out, "cat ~/.env; export API_KEY=[REDACTED:secret] # [REDACTED:pii]");
//! # Ok::<(), aep_core::redact::RedactError>(())
//! ```

use std::borrow::Cow;
use std::fmt;
use std::sync::LazyLock;

use regex::{Captures, Regex, RegexBuilder};
use serde::{Deserialize, Serialize};
use serde_json::Value;

mod digest;
mod fields;
mod phone;
mod url;

pub use digest::{canonical_json, write_canonical_json, ContentDigest};
pub use fields::FieldPathError;
pub use url::redact_urls;

use fields::FieldPath;
use phone::phone_spans;

/// What rules (a) and (b) put in place of a secret (AEP-0003 §9.4).
///
/// ```
/// use aep_core::redact::{RedactOptions, Redactor, SECRET_MARKER};
/// let r = Redactor::new(RedactOptions::new())?;
/// assert_eq!(r.redact_text("key AKIAABCDEFGHIJKLMNOP"), format!("key {SECRET_MARKER}"));
/// # Ok::<(), aep_core::redact::RedactError>(())
/// ```
pub const SECRET_MARKER: &str = "[REDACTED:secret]";
/// What rule (d) puts in place of an e-mail address or phone number (AEP-0003 §9.4).
///
/// ```
/// use aep_core::redact::{RedactOptions, Redactor, PII_MARKER};
/// let r = Redactor::new(RedactOptions::new())?;
/// assert_eq!(r.redact_text("mail ops@example.com"), format!("mail {PII_MARKER}"));
/// # Ok::<(), aep_core::redact::RedactError>(())
/// ```
pub const PII_MARKER: &str = "[REDACTED:pii]";
/// What rule (c) puts in place of a home directory prefix (AEP-0003 §9.4).
///
/// ```
/// use aep_core::redact::{RedactOptions, Redactor, HOME_MARKER};
/// let r = Redactor::new(RedactOptions::new().home("/srv/op"))?;
/// assert_eq!(r.redact_text("/srv/op/notes.md"), format!("{HOME_MARKER}/notes.md"));
/// # Ok::<(), aep_core::redact::RedactError>(())
/// ```
pub const HOME_MARKER: &str = "~";
/// Operator-configured secret values shorter than this are ignored: replacing every
/// occurrence of a two- or three-character string would shred ordinary text, and such a
/// value is no secret anyway.
///
/// ```
/// use aep_core::redact::{RedactOptions, Redactor, MIN_SECRET_VALUE_LEN};
/// assert_eq!(MIN_SECRET_VALUE_LEN, 4);
/// let r = Redactor::new(RedactOptions::new().secret_value("abc").secret_value("abcd"))?;
/// assert_eq!(r.redact_text("abc abcd"), "abc [REDACTED:secret]");
/// # Ok::<(), aep_core::redact::RedactError>(())
/// ```
pub const MIN_SECRET_VALUE_LEN: usize = 4;

/// Why a [`Redactor`] could not be built.
///
/// ```
/// use aep_core::redact::{RedactError, RedactOptions, Redactor};
/// // The built-in patterns always compile; configured values are matched literally.
/// let built: Result<Redactor, RedactError> = Redactor::new(RedactOptions::new().secret_value("a.b*c(d"));
/// assert!(built.is_ok());
/// ```
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum RedactError {
    /// A built-in pattern failed to compile: a bug in this crate, please report it.
    #[error(
        "built-in redaction pattern failed to compile (a bug in aep-core, please report it): {0}"
    )]
    Builtin(#[source] regex::Error),
    /// The operator's secret values or names are too many or too long to compile into
    /// one matcher; split them across fewer, shorter entries.
    #[error("the configured secret values or names do not fit in a matcher (too many or too long; shorten the list): {0}")]
    Configured(#[source] regex::Error),
}

/// Operator options of the redaction pipeline (AEP-0003 §9.4 (b)-(d)).
///
/// Defaults: no configured secret values or names, no operator home (the core reads no
/// environment: pass `std::env::var("HOME")` yourself), any-user home paths redacted,
/// PII redacted. Deserializes from the camelCase keys the protocol corpus uses
/// (`secretValues`, `secretNames`, `home`, `anyUserHome`, `pii`), refusing unknown keys
/// so a misspelt option fails loudly instead of leaking.
///
/// ```
/// use aep_core::redact::RedactOptions;
///
/// let opts = RedactOptions::new()
///     .secret_value("s3cr3t-deploy-key")
///     .secret_name("DEPLOY_KEY")
///     .home("/home/op")
///     .pii(false);
/// assert!(!opts.redacts_pii());
/// assert_eq!(opts.home_dir(), Some("/home/op"));
///
/// let from_json: RedactOptions = serde_json::from_str(r#"{"secretValues":["s3cr3t-deploy-key"],"pii":false}"#)?;
/// assert_eq!(from_json.secret_values(), ["s3cr3t-deploy-key"]);
/// assert!(serde_json::from_str::<RedactOptions>(r#"{"pi":false}"#).is_err());
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
#[must_use = "options do nothing until passed to `Redactor::new`"]
pub struct RedactOptions {
    secret_values: SecretValues,
    secret_names: Vec<String>,
    home: Option<String>,
    any_user_home: bool,
    pii: bool,
}

/// The literal secret values of [`RedactOptions`]: on the wire the plain list, in
/// `Debug` only their count, so the secrets themselves never reach a log.
#[derive(Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(transparent)]
struct SecretValues(Vec<String>);

impl fmt::Debug for SecretValues {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{} hidden]", self.0.len())
    }
}

impl Default for RedactOptions {
    fn default() -> Self {
        RedactOptions {
            secret_values: SecretValues::default(),
            secret_names: Vec::new(),
            home: None,
            any_user_home: true,
            pii: true,
        }
    }
}

impl RedactOptions {
    /// The defaults (see the type's documentation).
    ///
    /// ```
    /// let opts = aep_core::redact::RedactOptions::new();
    /// assert!(opts.redacts_pii() && opts.redacts_any_user_home());
    /// ```
    pub fn new() -> Self {
        RedactOptions::default()
    }

    crate::setters! {
        /// Adds a literal secret value, replaced wherever it occurs (rule (b)). Values shorter
        /// than [`MIN_SECRET_VALUE_LEN`] are ignored.
        ///
        /// ```
        /// let opts = aep_core::redact::RedactOptions::new().secret_value("hunter22");
        /// assert_eq!(opts.secret_values(), ["hunter22"]);
        /// ```
        pub fn secret_value(value: impl Into<String>) => self.secret_values.0.push(value.into());
    }

    /// Adds several literal secret values (rule (b)).
    ///
    /// ```
    /// let opts = aep_core::redact::RedactOptions::new().extend_secret_values(["k1-value", "k2-value"]);
    /// assert_eq!(opts.secret_values().len(), 2);
    /// ```
    pub fn extend_secret_values<I, S>(mut self, values: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.secret_values
            .0
            .extend(values.into_iter().map(Into::into));
        self
    }

    /// Adds the values of the named environment variables or config keys, looked up
    /// through `lookup` (rule (b): "values of environment variables / config keys the
    /// operator lists as secret"). The names themselves are also added as
    /// [`secret_name`](Self::secret_name)s. The core reads no environment: pass
    /// `|name| std::env::var(name).ok()` to use the process environment.
    ///
    /// ```
    /// use aep_core::redact::RedactOptions;
    /// let env = [("DEPLOY_KEY", "dk-0123456789")];
    /// let opts = RedactOptions::new().secrets_from(["DEPLOY_KEY", "UNSET"], |n| {
    ///     env.iter().find(|(k, _)| *k == n).map(|(_, v)| v.to_string())
    /// });
    /// assert_eq!(opts.secret_values(), ["dk-0123456789"]);
    /// assert_eq!(opts.secret_names(), ["DEPLOY_KEY", "UNSET"]);
    /// ```
    pub fn secrets_from<I, S, F>(mut self, names: I, mut lookup: F) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
        F: FnMut(&str) -> Option<String>,
    {
        for name in names {
            let name = name.into();
            if let Some(value) = lookup(&name) {
                self.secret_values.0.push(value);
            }
            self.secret_names.push(name);
        }
        self
    }

    crate::setters! {
        /// Adds a key name the operator lists as secret (rule (b)): in text, the value of a
        /// `NAME=value` / `NAME: value` assignment is replaced; in JSON values, the value of
        /// an object member with that key (compared case-insensitively) is replaced. The
        /// built-in credential names (`password`, `token`, `api_key`, …) need no listing.
        ///
        /// ```
        /// use aep_core::redact::{RedactOptions, Redactor};
        /// let r = Redactor::new(RedactOptions::new().secret_name("DEPLOY_KEY"))?;
        /// assert_eq!(r.redact_text("DEPLOY_KEY=abc"), "DEPLOY_KEY=[REDACTED:secret]");
        /// # Ok::<(), aep_core::redact::RedactError>(())
        /// ```
        pub fn secret_name(name: impl Into<String>) => self.secret_names.push(name.into());

        /// Sets the operator's home directory, replaced by `~` (rule (c)). A trailing
        /// separator is ignored; `/` and empty paths are ignored.
        ///
        /// ```
        /// let opts = aep_core::redact::RedactOptions::new().home("/srv/agent/");
        /// assert_eq!(opts.home_dir(), Some("/srv/agent/"));
        /// ```
        pub fn home(path: impl Into<String>) => home = Some(path.into());

        /// Whether any `/home/<user>`, `/Users/<user>` and `C:\Users\<user>` prefix is
        /// replaced by `~`, not only the operator's own home (default `true`; hardening
        /// beyond the §9.4 floor that the corpus pins).
        ///
        /// ```
        /// let opts = aep_core::redact::RedactOptions::new().any_user_home(false);
        /// assert!(!opts.redacts_any_user_home());
        /// ```
        pub fn any_user_home(on: bool) => any_user_home = on;

        /// Whether rule (d), e-mail addresses and phone numbers, runs (default `true`: the
        /// spec has it on by default at `redacted`, operator-disableable).
        ///
        /// ```
        /// assert!(!aep_core::redact::RedactOptions::new().pii(false).redacts_pii());
        /// ```
        pub fn pii(on: bool) => pii = on;
    }

    /// The configured secret values.
    ///
    /// ```
    /// assert!(aep_core::redact::RedactOptions::new().secret_values().is_empty());
    /// ```
    pub fn secret_values(&self) -> &[String] {
        &self.secret_values.0
    }

    /// The configured secret key names.
    ///
    /// ```
    /// assert!(aep_core::redact::RedactOptions::new().secret_names().is_empty());
    /// ```
    pub fn secret_names(&self) -> &[String] {
        &self.secret_names
    }

    /// The operator's home directory, if set.
    ///
    /// ```
    /// assert_eq!(aep_core::redact::RedactOptions::new().home_dir(), None);
    /// ```
    pub fn home_dir(&self) -> Option<&str> {
        self.home.as_deref()
    }

    /// Whether any user's home path is replaced.
    ///
    /// ```
    /// assert!(aep_core::redact::RedactOptions::new().redacts_any_user_home());
    /// ```
    pub fn redacts_any_user_home(&self) -> bool {
        self.any_user_home
    }

    /// Whether PII is replaced.
    ///
    /// ```
    /// assert!(aep_core::redact::RedactOptions::new().redacts_pii());
    /// ```
    pub fn redacts_pii(&self) -> bool {
        self.pii
    }
}

/// Credential-like names. In text they introduce an assignment whose value is a secret;
/// as JSON object keys their value is a secret. `pwd` and a bare `auth` are left out on
/// purpose: the first is the shell's working directory, the second names schemes more
/// often than it holds one.
const CREDENTIAL_WORDS: &str = r"passw(?:or)?d|passphrase|secret|api[_-]?key|apikey|token|authorization|credentials?|private[_-]?key|access[_-]?key|cookie";

/// Authorization schemes that may sit between a credential key and its value
/// (`Authorization: Basic dXNl…`): the value is the scheme and the token together.
const AUTH_SCHEMES: &str =
    r"(?:basic|bearer|digest|token|negotiate|ntlm|hoba|mutual|apikey|aws4-hmac-sha256)\s+";

/// The compiled built-in patterns, shared by every [`Redactor`].
struct Builtin {
    /// Rule (a), shapes replaced whole: PEM blocks (and an unterminated private key,
    /// to the end of the text), AWS key ids, JWTs, vendor token formats.
    tokens: Regex,
    /// Rule (a): `Bearer <token>`; the scheme word is kept.
    bearer: Regex,
    /// Rule (a): `key = value` with a credential-like key, quoted or escaped.
    assignment: Regex,
    /// Rule (a): `--password value` command-line flags.
    flag: Regex,
    /// Rule (a): `scheme://user:password@host`.
    url_credentials: Regex,
    /// Rule (a), JSON side: credential-named object keys.
    secret_key: Regex,
    /// Rule (c): any user's home directory, POSIX and macOS.
    home: Regex,
    /// Rule (c): any user's home directory, Windows.
    windows_home: Regex,
    /// Rule (d): e-mail addresses.
    email: Regex,
    /// Rule (d): phone number candidates, validated by [`phone_spans`].
    phone: Regex,
}

/// The tail of an assignment after the key: an optional (possibly escaped) closing
/// quote, the separator, and the value (a quoted string, an optional auth scheme plus a
/// token, or a bare token). Groups: `q` quote, `sep` separator, `val` value.
const ASSIGNMENT_TAIL: &str = r#"(?P<q>\\*["']?)(?P<sep>\s*(?::=|=>|[=:])\s*)(?P<val>"(?:[^"\\\r\n]|\\.)*"?|'[^'\r\n]*'?|(?i:AUTH_SCHEMES)?[^\s:]\S*)"#;

/// The user segment after a home root: the separator and the user name, which ends at
/// the next separator, space, quote or punctuation (and never contains the `~` of an
/// earlier replacement).
const HOME_USER: &str = r#"(?:\\+|/)[^/\\\s"'`:;,()\[\]{}<>|~]+"#;

fn builtin_patterns() -> Result<Builtin, regex::Error> {
    let tail = ASSIGNMENT_TAIL.replace("AUTH_SCHEMES", AUTH_SCHEMES);
    let tokens = [
        r"-----BEGIN [A-Z0-9 ]{1,64}-----(?s:.)*?-----END [A-Z0-9 ]{1,64}-----",
        r"-----BEGIN [A-Z0-9 ]{0,64}PRIVATE KEY-----(?s:.)*",
        r"(?:AKIA|ASIA)[0-9A-Z]{16}",
        r"eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+){0,2}",
        r"(?-u:\b)gh[pousr]_[A-Za-z0-9]{20,}",
        r"(?-u:\b)github_pat_[A-Za-z0-9_]{20,}",
        r"(?-u:\b)glpat-[A-Za-z0-9_-]{20,}",
        r"(?-u:\b)xox[abposr]-[A-Za-z0-9-]{10,}",
        r"(?-u:\b)sk-[A-Za-z0-9_-]{20,}",
        r"(?-u:\b)(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{10,}",
        r"AIza[A-Za-z0-9_-]{35}",
        r"(?-u:\b)hf_[A-Za-z0-9]{30,}",
        r"(?-u:\b)npm_[A-Za-z0-9]{36}",
        r"(?-u:\b)pypi-[A-Za-z0-9_-]{50,}",
        r"(?-u:\b)ya29\.[A-Za-z0-9_-]{20,}",
    ]
    .join("|");
    Ok(Builtin {
        tokens: Regex::new(&tokens)?,
        bearer: Regex::new(
            r"(?-u:\b)(?:(?P<s1>Bearer\s+)[A-Za-z0-9._~+/-]+=*|(?P<s2>(?i:bearer)\s+)[A-Za-z0-9._~+/-]{8,}=*)",
        )?,
        assignment: Regex::new(&format!(
            r"(?i)(?-u:\b)(?P<key>(?:[a-z0-9]+[_.-])*(?:{CREDENTIAL_WORDS})(?:[_.-][a-z0-9]+)*)(?-u:\b){tail}"
        ))?,
        flag: Regex::new(&format!(
            r"(?i)(?P<key>(?:^|\s)--?(?:[a-z0-9]+-)*(?:{CREDENTIAL_WORDS})[ \t]+)(?P<val>[^\s-]\S*)"
        ))?,
        url_credentials: Regex::new(
            r"(?i)(?P<pre>(?-u:\b)[a-z][a-z0-9+.-]*://[^\s/:@]+:)(?P<val>[^\s/@]+)(?P<at>@)",
        )?,
        secret_key: Regex::new(&format!(
            r"(?i)^(?:[a-z0-9]+[_.-])*(?:{CREDENTIAL_WORDS})(?:[_.-][a-z0-9]+)*$"
        ))?,
        // Two automata rather than one alternation: each keeps its literal prefilter.
        home: Regex::new(&format!("/(?:home|Users){HOME_USER}"))?,
        windows_home: Regex::new(&format!(r"[A-Za-z]:(?:\\+|/)Users{HOME_USER}"))?,
        email: Regex::new(
            r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}(?-u:\b)",
        )?,
        // At least PHONE_MIN_DIGITS digits, separators no longer than PHONE_MAX_SEPARATOR.
        phone: Regex::new(r"[+(]?[0-9](?:[() .-]{0,3}[0-9]){6,}")?,
    })
}

static BUILTIN: LazyLock<Result<Builtin, regex::Error>> = LazyLock::new(builtin_patterns);

/// The redaction pipeline of AEP-0003 §9.4, configured by [`RedactOptions`].
///
/// Build once (compiling the operator's values and names), then redact any number of
/// texts and JSON values; a `Redactor` is cheap to clone and `Send + Sync`.
///
/// ```
/// use aep_core::redact::{RedactOptions, Redactor};
/// use serde_json::json;
///
/// let r = Redactor::new(RedactOptions::default())?;
/// assert_eq!(r.redact_text("Authorization: Bearer abc123.DEF"), "Authorization: [REDACTED:secret]");
/// assert_eq!(
///     r.redact_value(&json!({"headers": {"x-api-key": "k"}, "argv": ["--user", "bob@example.com"]})),
///     json!({"headers": {"x-api-key": "[REDACTED:secret]"}, "argv": ["--user", "[REDACTED:pii]"]}),
/// );
/// # Ok::<(), aep_core::redact::RedactError>(())
/// ```
#[derive(Clone)]
pub struct Redactor {
    options: RedactOptions,
    builtin: &'static Builtin,
    /// Rule (b): the configured values, longest first.
    values: Option<Regex>,
    /// Rule (b): assignments to the configured names.
    name_assignment: Option<Regex>,
    /// Rule (b): the configured names, lowercased, for object keys.
    names_lower: Vec<String>,
    /// Rule (c): the operator's home, without a trailing separator.
    home: Option<String>,
}

impl fmt::Debug for Redactor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Redactor")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

/// Replaces `text` by `f(text)` when `f` changed something, without copying otherwise.
fn then<'a>(text: Cow<'a, str>, f: impl FnOnce(&str) -> Cow<'_, str>) -> Cow<'a, str> {
    let changed = match f(&text) {
        Cow::Owned(o) => Some(o),
        Cow::Borrowed(_) => None,
    };
    match changed {
        Some(o) => Cow::Owned(o),
        None => text,
    }
}

/// The replacement of an assignment: key, quote and separator kept, the value replaced
/// by the marker (inside the same quotes, so quoted text stays well-formed).
fn assignment_replacement(caps: &Captures<'_>) -> String {
    let get = |name| caps.name(name).map_or("", |m| m.as_str());
    let val = get("val");
    let marker = if val.starts_with('"') {
        format!("\"{SECRET_MARKER}\"")
    } else if val.starts_with('\'') {
        format!("'{SECRET_MARKER}'")
    } else {
        SECRET_MARKER.to_owned()
    };
    format!("{}{}{}{marker}", get("key"), get("q"), get("sep"))
}

/// Whether `c` continues a path or file name (so a home prefix followed by it is a
/// different directory: `/home/op` inside `/home/operator`).
fn is_name_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '-' | '.')
}

impl Redactor {
    /// Compiles the pipeline for `options`.
    ///
    /// ```
    /// use aep_core::redact::{RedactOptions, Redactor};
    /// let r = Redactor::new(RedactOptions::new().secret_value("s3cr3t-value"))?;
    /// assert_eq!(r.redact_text("key s3cr3t-value"), "key [REDACTED:secret]");
    /// # Ok::<(), aep_core::redact::RedactError>(())
    /// ```
    pub fn new(options: RedactOptions) -> Result<Redactor, RedactError> {
        let builtin = BUILTIN
            .as_ref()
            .map_err(|e| RedactError::Builtin(e.clone()))?;
        let mut values: Vec<&str> = options
            .secret_values
            .0
            .iter()
            .map(String::as_str)
            // A value inside a marker would re-redact the marker on every pass.
            .filter(|v| {
                v.chars().count() >= MIN_SECRET_VALUE_LEN
                    && !SECRET_MARKER.contains(v)
                    && !PII_MARKER.contains(v)
            })
            .collect();
        // Longest first: the alternation prefers earlier branches at the same start.
        values.sort_by_key(|v| std::cmp::Reverse(v.len()));
        values.dedup();
        let values = compile_alternation(&values, |alt| alt)?;
        let names: Vec<&str> = options
            .secret_names
            .iter()
            .map(String::as_str)
            .filter(|n| !n.trim().is_empty())
            .collect();
        let tail = ASSIGNMENT_TAIL.replace("AUTH_SCHEMES", AUTH_SCHEMES);
        let name_assignment = compile_alternation(&names, |alt| {
            format!(r"(?i)(?P<key>(?-u:\b)(?:{alt})(?-u:\b)){tail}")
        })?;
        let names_lower = names.iter().map(|n| n.to_lowercase()).collect();
        let home = options
            .home
            .as_deref()
            .map(|h| h.trim_end_matches(['/', '\\']))
            .filter(|h| !h.is_empty())
            .map(str::to_owned);
        Ok(Redactor {
            options,
            builtin,
            values,
            name_assignment,
            names_lower,
            home,
        })
    }

    /// The options this redactor was built from.
    ///
    /// ```
    /// use aep_core::redact::{RedactOptions, Redactor};
    /// let r = Redactor::new(RedactOptions::new().pii(false))?;
    /// assert!(!r.options().redacts_pii());
    /// # Ok::<(), aep_core::redact::RedactError>(())
    /// ```
    pub fn options(&self) -> &RedactOptions {
        &self.options
    }

    /// Runs the pipeline over one text: (a) secrets, (b) configured names, (c) home
    /// paths, (d) PII, in that order. Returns the text unchanged (borrowed) when nothing
    /// matched.
    ///
    /// The output is a fixed point: redacting it again changes nothing, so a redacting
    /// re-emitter may run the pipeline over text that already passed it. A later rule can
    /// assemble a shape an earlier rule matches (a home path shortened to `~` next to
    /// `:pw@`, say), so a text that changed is run again, at most
    /// [`MAX_PASSES`] times in all.
    ///
    /// ```
    /// use aep_core::redact::{RedactOptions, Redactor};
    /// let r = Redactor::new(RedactOptions::default())?;
    /// assert_eq!(r.redact_text("password=foo@bar.com"), "password=[REDACTED:secret]");
    /// assert_eq!(r.redact_text("call +1 (555) 123-4567"), "call [REDACTED:pii]");
    /// assert_eq!(r.redact_text("node 22.11.0"), "node 22.11.0");
    /// # Ok::<(), aep_core::redact::RedactError>(())
    /// ```
    #[must_use = "the redacted text is a new value; the input is unchanged"]
    pub fn redact_text<'a>(&self, text: &'a str) -> Cow<'a, str> {
        // A replacement may rewrite a match to itself (an already-redacted assignment),
        // so "changed" means a different text, not an owned one.
        let mut current = match self.pass(text) {
            Cow::Owned(o) if o != text => o,
            _ => return Cow::Borrowed(text),
        };
        for _ in 1..MAX_PASSES {
            match self.pass(&current) {
                Cow::Owned(o) if o != current => current = o,
                _ => break,
            }
        }
        Cow::Owned(current)
    }

    /// One run of rules (a) to (d).
    fn pass<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let b = self.builtin;
        // (a) secrets and credentials.
        let mut out = then(Cow::Borrowed(text), |t| {
            b.tokens.replace_all(t, SECRET_MARKER)
        });
        out = then(out, |t| {
            b.bearer.replace_all(t, |c: &Captures<'_>| {
                let scheme = c.name("s1").or_else(|| c.name("s2"));
                format!("{}{SECRET_MARKER}", scheme.map_or("", |m| m.as_str()))
            })
        });
        out = then(out, |t| b.assignment.replace_all(t, assignment_replacement));
        out = then(out, |t| b.flag.replace_all(t, "${key}[REDACTED:secret]"));
        out = then(out, |t| {
            b.url_credentials
                .replace_all(t, "${pre}[REDACTED:secret]${at}")
        });
        // (b) configured values and names.
        if let Some(values) = &self.values {
            out = then(out, |t| values.replace_all(t, SECRET_MARKER));
        }
        if let Some(names) = &self.name_assignment {
            out = then(out, |t| names.replace_all(t, assignment_replacement));
        }
        // (c) home paths.
        if let Some(home) = &self.home {
            out = then(out, |t| replace_home(t, home));
        }
        if self.options.any_user_home {
            out = then(out, |t| b.home.replace_all(t, HOME_MARKER));
            out = then(out, |t| b.windows_home.replace_all(t, HOME_MARKER));
        }
        // (d) PII.
        if self.options.pii {
            out = then(out, |t| b.email.replace_all(t, PII_MARKER));
            out = then(out, |t| replace_phones(&b.phone, t));
        }
        out
    }

    /// Whether an object member with this key holds a secret whatever its value looks
    /// like: a credential-like name (`token`, `API_KEY`, `x-api-key`, `db_password`,
    /// `set-cookie`, …) or a name the operator listed.
    ///
    /// ```
    /// use aep_core::redact::{RedactOptions, Redactor};
    /// let r = Redactor::new(RedactOptions::new().secret_name("PIN"))?;
    /// assert!(r.is_secret_key("Authorization") && r.is_secret_key("GITHUB_TOKEN") && r.is_secret_key("pin"));
    /// assert!(!r.is_secret_key("max_tokens") && !r.is_secret_key("region"));
    /// # Ok::<(), aep_core::redact::RedactError>(())
    /// ```
    pub fn is_secret_key(&self, key: &str) -> bool {
        self.builtin.secret_key.is_match(key)
            || (!self.names_lower.is_empty() && {
                let lower = key.to_lowercase();
                self.names_lower.contains(&lower)
            })
    }

    /// Runs the pipeline over a JSON value: every string, recursively, keys kept; the
    /// value of a [secret key](Self::is_secret_key) becomes `"[REDACTED:secret]"` unless
    /// it is `null`. Numbers, booleans and `null` pass unchanged.
    ///
    /// ```
    /// use aep_core::redact::{RedactOptions, Redactor};
    /// use serde_json::json;
    /// let r = Redactor::new(RedactOptions::default())?;
    /// let v = json!({"token": "plainlooking", "count": 42, "argv": ["AKIAIOSFODNN7EXAMPLE"]});
    /// assert_eq!(r.redact_value(&v), json!({"token": "[REDACTED:secret]", "count": 42, "argv": ["[REDACTED:secret]"]}));
    /// # Ok::<(), aep_core::redact::RedactError>(())
    /// ```
    #[must_use = "the redacted value is a new value; use redact_value_in_place to change it where it is"]
    pub fn redact_value(&self, value: &Value) -> Value {
        let mut out = value.clone();
        self.redact_value_in_place(&mut out);
        out
    }

    /// [`redact_value`](Self::redact_value) in place.
    ///
    /// ```
    /// use aep_core::redact::{RedactOptions, Redactor};
    /// use serde_json::json;
    /// let r = Redactor::new(RedactOptions::default())?;
    /// let mut v = json!(["see /home/alice/x"]);
    /// r.redact_value_in_place(&mut v);
    /// assert_eq!(v, json!(["see ~/x"]));
    /// # Ok::<(), aep_core::redact::RedactError>(())
    /// ```
    pub fn redact_value_in_place(&self, value: &mut Value) {
        // An explicit stack: a value built in memory may nest deeper than the call stack.
        let mut stack = vec![value];
        while let Some(v) = stack.pop() {
            match v {
                Value::String(s) => {
                    if let Cow::Owned(o) = self.redact_text(s) {
                        *s = o;
                    }
                }
                Value::Array(items) => stack.extend(items.iter_mut()),
                Value::Object(members) => {
                    for (key, member) in members.iter_mut() {
                        if !member.is_null() && self.is_secret_key(key) {
                            *member = Value::String(SECRET_MARKER.to_owned());
                        } else {
                            stack.push(member);
                        }
                    }
                }
                Value::Null | Value::Bool(_) | Value::Number(_) => {}
            }
        }
    }

    /// Runs the pipeline over the named fields of `data` only: the redacting re-emitter
    /// path of AEP-0001 §8.2(e), where a hop keeping `redacted`-gated fields must pass
    /// each through §9.4. Paths use the schema-annotation notation: members joined by
    /// `.`, `[]` after a member for "every item of this array" (`answer.text`,
    /// `steps[].note`). A path that does not resolve in `data` is skipped; a string field
    /// is redacted as text, a structured one as a value. Returns how many fields were
    /// visited.
    ///
    /// ```
    /// use aep_core::redact::{RedactOptions, Redactor};
    /// use serde_json::json;
    /// let r = Redactor::new(RedactOptions::default())?;
    /// let mut data = json!({"answer": {"text": "mail me: a@b.io", "option": "a@b.io"}, "notes": [{"t": "x@y.io"}]});
    /// let n = r.redact_fields(&mut data, ["answer.text", "notes[].t", "absent.field"])?;
    /// assert_eq!(n, 2);
    /// assert_eq!(data, json!({"answer": {"text": "mail me: [REDACTED:pii]", "option": "a@b.io"}, "notes": [{"t": "[REDACTED:pii]"}]}));
    /// assert!(r.redact_fields(&mut data, ["answer..text"]).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn redact_fields<'p>(
        &self,
        data: &mut Value,
        paths: impl IntoIterator<Item = &'p str>,
    ) -> Result<usize, FieldPathError> {
        let paths = paths
            .into_iter()
            .map(FieldPath::parse)
            .collect::<Result<Vec<_>, _>>()?;
        let mut visited = 0;
        for path in &paths {
            for target in path.resolve(data) {
                self.redact_value_in_place(target);
                visited += 1;
            }
        }
        Ok(visited)
    }
}

/// Compiles an alternation of the escaped `literals`, wrapped by `wrap`; `None` when
/// there are none.
fn compile_alternation<W: Into<String>>(
    literals: &[&str],
    wrap: impl FnOnce(String) -> W,
) -> Result<Option<Regex>, RedactError> {
    if literals.is_empty() {
        return Ok(None);
    }
    let alt = literals
        .iter()
        .map(|l| regex::escape(l))
        .collect::<Vec<_>>()
        .join("|");
    RegexBuilder::new(&wrap(alt).into())
        .size_limit(64 << 20)
        .build()
        .map(Some)
        .map_err(RedactError::Configured)
}

/// Replaces the operator's home prefix by `~` where it is a whole directory name.
fn replace_home<'t>(text: &'t str, home: &str) -> Cow<'t, str> {
    let spans = text
        .match_indices(home)
        .map(|(at, _)| (at, at + home.len()))
        .filter(|&(_, end)| !text[end..].chars().next().is_some_and(is_name_char));
    replace_spans(text, spans, HOME_MARKER)
}

/// Replaces the phone numbers among the candidates of `candidates` by [`PII_MARKER`].
fn replace_phones<'t>(candidates: &Regex, text: &'t str) -> Cow<'t, str> {
    let spans = candidates
        .find_iter(text)
        .flat_map(|m| phone_spans(text, m.start(), m.end()));
    replace_spans(text, spans, PII_MARKER)
}

/// Replaces the byte `spans` of `text` (ascending, disjoint, non-empty) by `marker`.
fn replace_spans<'t>(
    text: &'t str,
    spans: impl Iterator<Item = (usize, usize)>,
    marker: &str,
) -> Cow<'t, str> {
    let mut out = String::new();
    let mut last = 0;
    for (start, end) in spans {
        out.push_str(&text[last..start]);
        out.push_str(marker);
        last = end;
    }
    if last == 0 {
        return Cow::Borrowed(text);
    }
    out.push_str(&text[last..]);
    Cow::Owned(out)
}

/// How many times [`Redactor::redact_text`] runs the rules over a text that keeps
/// changing. Each pass only replaces matches by markers; ordinary text settles after one or two.
///
/// ```
/// use aep_core::redact::{RedactOptions, Redactor, MAX_PASSES};
/// let r = Redactor::new(RedactOptions::new())?;
/// let once = r.redact_text("password=hunter2 ops@example.com").into_owned();
/// assert!(MAX_PASSES >= 2);
/// assert_eq!(r.redact_text(&once), once); // settled: a second run changes nothing
/// # Ok::<(), aep_core::redact::RedactError>(())
/// ```
pub const MAX_PASSES: usize = 4;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn r() -> Redactor {
        Redactor::new(RedactOptions::default()).unwrap()
    }

    #[test]
    fn builtin_patterns_compile() {
        assert!(BUILTIN.is_ok(), "{:?}", BUILTIN.as_ref().err());
    }

    #[test]
    fn debug_hides_the_secret_values_and_the_wire_keeps_them() {
        let opts = RedactOptions::new()
            .secret_value("hunter22-value")
            .secret_name("DEPLOY_KEY");
        let shown = format!("{:?}", Redactor::new(opts.clone()).unwrap());
        assert!(!shown.contains("hunter22"), "{shown}");
        assert!(shown.contains(r#"secret_values: [1 hidden], secret_names: ["DEPLOY_KEY"]"#));
        let wire = serde_json::to_value(&opts).unwrap();
        assert_eq!(wire["secretValues"], json!(["hunter22-value"]));
        assert_eq!(serde_json::from_value::<RedactOptions>(wire).unwrap(), opts);
    }

    #[test]
    fn home_prefix_is_a_whole_directory() {
        let r = Redactor::new(RedactOptions::new().home("/opt/op/").any_user_home(false)).unwrap();
        assert_eq!(
            r.redact_text("/opt/op/x /opt/operator /opt/op"),
            "~/x /opt/operator ~"
        );
    }

    #[test]
    fn phones_and_near_misses() {
        let r = r();
        for phone in [
            "555-123-4567",
            "(555) 123-4567",
            "+44 20 7946 0958",
            "+33 1 23 45 67 89",
            "555.123.4567",
            "555-1234",
            "+4915123456789",
        ] {
            assert_eq!(
                r.redact_text(&format!("tel {phone} ok")),
                "tel [REDACTED:pii] ok",
                "{phone}"
            );
        }
        for not_phone in [
            "2026-07-03",
            "03-07-2026",
            "192.168.100.200",
            "1751530504221",
            "1.234.567",
            "v1.555-123-4567",
            "2024-2025",
            "10:15:04.221",
            "978-3-16-148410-0",
        ] {
            assert_eq!(r.redact_text(not_phone), not_phone);
        }
        assert_eq!(r.redact_text("12.5 555-123-4567"), "12.5 [REDACTED:pii]");
    }

    #[test]
    fn assignments_keep_shape() {
        let r = r();
        assert_eq!(
            r.redact_text(r#"{"token": "a b"}"#),
            r#"{"token": "[REDACTED:secret]"}"#
        );
        assert_eq!(
            r.redact_text(r#"{\"token\": \"tok_x\"}"#),
            r#"{\"token\": [REDACTED:secret]"#
        );
        assert_eq!(r.redact_text("max_tokens: 5"), "max_tokens: 5");
        assert_eq!(
            r.redact_text("GITHUB_TOKEN=abc"),
            "GITHUB_TOKEN=[REDACTED:secret]"
        );
        assert_eq!(r.redact_text("use secret::Vault;"), "use secret::Vault;");
        assert_eq!(
            r.redact_text("run --api-token abc --v"),
            "run --api-token [REDACTED:secret] --v"
        );
        assert_eq!(
            r.redact_text("git clone https://bob:pw123@git.test/x"),
            "git clone https://bob:[REDACTED:secret]@git.test/x"
        );
    }

    #[test]
    fn deep_nesting_does_not_exhaust_the_stack() {
        let mut deep = json!("mail a@b.io");
        for _ in 0..100_000 {
            deep = Value::Array(vec![deep]);
        }
        r().redact_value_in_place(&mut deep);
        let canonical = canonical_json(&deep);
        assert!(canonical.contains("[REDACTED:pii]") && canonical.len() > 200_000);
        // serde_json drops values recursively; this one would overflow the test thread.
        std::mem::forget(deep);
    }

    #[test]
    fn unterminated_private_key_runs_to_the_end() {
        let out = r().redact_text("a -----BEGIN PRIVATE KEY-----\nMIIE\nrest");
        assert_eq!(out, "a [REDACTED:secret]");
    }

    #[test]
    fn configured_values_never_eat_markers() {
        let r = Redactor::new(RedactOptions::new().extend_secret_values([
            "REDACTED",
            "abc",
            "longer-value",
        ]))
        .unwrap();
        assert_eq!(
            r.redact_text("abc longer-value REDACTED"),
            "abc [REDACTED:secret] REDACTED"
        );
        assert!(!format!("{r:?}").contains("longer-value"));
        assert!(!format!("{:?}", r.options()).contains("longer-value"));
    }
}
