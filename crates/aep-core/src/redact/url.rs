//! Secrets in URLs, for diagnostics: [`redact_urls`].
//!
//! A relay's address may carry a credential: `http://user:SECRET@host` (userinfo) or
//! `?token=SECRET` (a query parameter a proxy or a gateway reads). AEP-0003 §8 puts the
//! token in the `Authorization` header, never in the URL, but an operator pastes the URL
//! they have; every error and log line that names the address writes it through here.
//! Unlike the §9.4 pipeline over event content, this knows URLs: the whole userinfo
//! goes (a user name alone may be the token), and the value of every query parameter
//! whose name looks like a credential.

use std::borrow::Cow;

use super::SECRET_MARKER;

/// Words that make a query parameter's name a credential's (matched in its lowercase
/// name, anywhere: `access_token`, `X-Api-Key`, `sig`, `password`).
const CREDENTIAL_PARTS: &[&str] = &[
    "token",
    "secret",
    "passw",
    "pwd",
    "key",
    "auth",
    "sig",
    "credential",
    "jwt",
    "cookie",
];

/// Every URL in `text` with its userinfo and its credential-named query values replaced
/// by [`SECRET_MARKER`]; `text` unchanged (and not copied) when there is none.
///
/// A URL is a scheme, `://`, and what follows up to whitespace or a quote or angle
/// bracket; it may stand alone or inside a message.
///
/// ```
/// use aep_core::redact::redact_urls;
///
/// assert_eq!(
///     redact_urls("http://user:hunter2@relay:8787/stream?filter=%7B%7D&token=abc"),
///     "http://[REDACTED:secret]@relay:8787/stream?filter=%7B%7D&token=[REDACTED:secret]"
/// );
/// assert_eq!(
///     redact_urls("cannot reach ws://tok@h/socket (refused)"),
///     "cannot reach ws://[REDACTED:secret]@h/socket (refused)"
/// );
/// let plain = "http://127.0.0.1:8787/stream?live=0";
/// assert!(matches!(redact_urls(plain), std::borrow::Cow::Borrowed(_)));
/// ```
pub fn redact_urls(text: &str) -> Cow<'_, str> {
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut from = 0;
    while let Some(at) = text[from..].find("://").map(|i| from + i) {
        let start = scheme_start(text, at);
        let end = url_end(text, at + 3);
        from = end.max(at + 3);
        let Some(start) = start else { continue };
        let url = &text[start..end];
        if let Cow::Owned(redacted) = redact_one(url, at - start) {
            let buf = out.get_or_insert_with(|| String::with_capacity(text.len()));
            buf.push_str(&text[copied..start]);
            buf.push_str(&redacted);
            copied = end;
        }
    }
    match out {
        None => Cow::Borrowed(text),
        Some(mut buf) => {
            buf.push_str(&text[copied..]);
            Cow::Owned(buf)
        }
    }
}

/// Where the scheme before the `://` at `sep` starts: letters, digits, `+`, `.`, `-`,
/// starting with a letter (RFC 3986 §3.1).
fn scheme_start(text: &str, sep: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut start = sep;
    while start > 0 {
        let b = bytes[start - 1];
        if b.is_ascii_alphanumeric() || matches!(b, b'+' | b'.' | b'-') {
            start -= 1;
        } else {
            break;
        }
    }
    // the scheme's first character is a letter: skip leading digits and signs
    while start < sep && !bytes[start].is_ascii_alphabetic() {
        start += 1;
    }
    (start < sep).then_some(start)
}

fn url_end(text: &str, from: usize) -> usize {
    text[from..]
        .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '`' | '<' | '>'))
        .map_or(text.len(), |i| from + i)
}

/// One URL (`sep` is where its `://` is) with its secrets replaced.
fn redact_one(url: &str, sep: usize) -> Cow<'_, str> {
    let rest = sep + 3;
    let authority_end = url[rest..]
        .find(['/', '?', '#'])
        .map_or(url.len(), |i| rest + i);
    let userinfo = url[rest..authority_end].rfind('@').map(|i| rest + i);
    let query = url[authority_end..]
        .find('?')
        .map(|i| authority_end + i + 1)
        .filter(|&q| url[authority_end..q].find('#').is_none());
    let secret_query = query.is_some_and(|q| params(url, q).any(|(name, _)| is_credential(name)));
    if userinfo.is_none() && !secret_query {
        return Cow::Borrowed(url);
    }
    let mut out = String::with_capacity(url.len());
    let mut copied = 0;
    if let Some(at) = userinfo {
        out.push_str(&url[..rest]);
        out.push_str(SECRET_MARKER);
        copied = at;
    }
    if let (Some(q), true) = (query, secret_query) {
        for (name, value) in params(url, q) {
            if is_credential(name) && !value.is_empty() {
                let start = value.as_ptr() as usize - url.as_ptr() as usize;
                out.push_str(&url[copied..start]);
                out.push_str(SECRET_MARKER);
                copied = start + value.len();
            }
        }
    }
    out.push_str(&url[copied..]);
    Cow::Owned(out)
}

/// The `name=value` pairs of the query starting at `q` (up to a `#`).
fn params(url: &str, q: usize) -> impl Iterator<Item = (&str, &str)> {
    let query = &url[q..];
    let query = query.split('#').next().unwrap_or_default();
    query.split('&').map(|pair| match pair.split_once('=') {
        Some((name, value)) => (name, value),
        None => (pair, &pair[pair.len()..]),
    })
}

fn is_credential(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    CREDENTIAL_PARTS.iter().any(|part| name.contains(part))
}

#[cfg(test)]
mod tests {
    use super::*;

    const R: &str = SECRET_MARKER;

    #[test]
    fn userinfo_goes_whole() {
        assert_eq!(
            redact_urls("https://user:pw@h.example/x"),
            format!("https://{R}@h.example/x")
        );
        assert_eq!(redact_urls("http://justatoken@h"), format!("http://{R}@h"));
        // an `@` after the authority is not userinfo
        assert_eq!(redact_urls("http://h/a@b"), "http://h/a@b");
        // the last `@` of the authority ends it
        assert_eq!(redact_urls("http://a@b:c@h:1/"), format!("http://{R}@h:1/"));
    }

    #[test]
    fn credential_named_query_values_go() {
        assert_eq!(
            redact_urls("http://h/stream?filter=%7B%7D&access_token=abc&live=0"),
            format!("http://h/stream?filter=%7B%7D&access_token={R}&live=0")
        );
        assert_eq!(
            redact_urls("http://h/?X-Api-Key=1&sig=2&Password=3#frag"),
            format!("http://h/?X-Api-Key={R}&sig={R}&Password={R}#frag")
        );
        // an empty value has nothing to hide
        assert_eq!(redact_urls("http://h/?token="), "http://h/?token=");
        // a `?` in the fragment starts no query
        assert_eq!(redact_urls("http://h/#a?token=x"), "http://h/#a?token=x");
    }

    #[test]
    fn urls_inside_messages_and_several_of_them() {
        let text = "error: `http://u:p@a:1` then \"ws://b/socket?token=t\" and http://c/ok.";
        assert_eq!(
            redact_urls(text),
            format!("error: `http://{R}@a:1` then \"ws://b/socket?token={R}\" and http://c/ok.")
        );
        assert!(matches!(redact_urls("no url here"), Cow::Borrowed(_)));
        assert!(matches!(
            redact_urls("http://h:1/stream (12)"),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn odd_text_is_left_alone_without_panicking() {
        for text in [
            "://",
            "://x@y",
            "1://a@b",
            "é://a@b",
            "http://",
            "x http://@",
            "http://h?",
            "http://h?&&=&token",
            "a://b://c@d",
            "http://[::1]:8787/?token=x",
        ] {
            let _ = redact_urls(text);
        }
        assert_eq!(redact_urls("://x@y"), "://x@y");
        assert_eq!(
            redact_urls("http://[::1]:8787/?token=x"),
            format!("http://[::1]:8787/?token={R}")
        );
    }
}
