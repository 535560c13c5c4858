//! The page itself: three files embedded in the binary (no Node at build time, no CDN,
//! nothing fetched from anywhere but the relay), served with a strict
//! Content-Security-Policy and a strong `ETag` (a digest of the bytes, so a new build
//! is fetched again and an unchanged one answers `304`).
//!
//! Budget: 64 KiB for the three together, uncompressed, held by a test.

use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

/// One embedded file.
#[derive(Debug)]
pub(crate) struct Asset {
    pub(crate) path: &'static str,
    pub(crate) content_type: &'static str,
    pub(crate) bytes: &'static [u8],
    etag: u64,
}

/// FNV-1a over the bytes, at compile time: the strong validator of one file.
const fn digest(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut i = 0;
    while i < bytes.len() {
        hash ^= bytes[i] as u64;
        hash = hash.wrapping_mul(0x0100_0000_01b3);
        i += 1;
    }
    hash
}

const fn asset(path: &'static str, content_type: &'static str, bytes: &'static [u8]) -> Asset {
    Asset {
        path,
        content_type,
        bytes,
        etag: digest(bytes),
    }
}

/// The page's files, by path.
pub(crate) static ASSETS: &[Asset] = &[
    asset(
        "/console",
        "text/html; charset=utf-8",
        include_bytes!("assets/index.html"),
    ),
    asset(
        "/console/console.js",
        "text/javascript; charset=utf-8",
        include_bytes!("assets/console.js"),
    ),
    asset(
        "/console/console.css",
        "text/css; charset=utf-8",
        include_bytes!("assets/console.css"),
    ),
];

/// The page may load only its own script and style and talk only to its own relay:
/// no inline script or style (a `style` attribute included), no eval, no image but the
/// relay's own, no frame, no form posted anywhere, no plugin, no `<base>`.
pub(crate) const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
    img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; \
    frame-ancestors 'none'";

/// The file at `path` (`/console/` is the page too).
pub(crate) fn find(path: &str) -> Option<&'static Asset> {
    let path = if path == "/console/" {
        "/console"
    } else {
        path
    };
    ASSETS.iter().find(|a| a.path == path)
}

impl Asset {
    fn etag(&self) -> String {
        format!("\"{:016x}\"", self.etag)
    }

    /// The answer to a `GET` (or `HEAD`: the body is dropped by the server) carrying
    /// `headers`: `304` when `If-None-Match` names this version.
    pub(crate) fn respond(&self, headers: &HeaderMap) -> Response {
        let etag = self.etag();
        let fresh = headers
            .get(header::IF_NONE_MATCH)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.split(',').any(|t| t.trim() == etag || t.trim() == "*"));
        let mut response = if fresh {
            StatusCode::NOT_MODIFIED.into_response()
        } else {
            (StatusCode::OK, self.bytes).into_response()
        };
        let h = response.headers_mut();
        if let Ok(v) = HeaderValue::from_str(&etag) {
            h.insert(header::ETAG, v);
        }
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(self.content_type),
        );
        // revalidated every time: the ETag makes that a 304 when nothing changed
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        security_headers(h);
        response
    }
}

/// What every console answer carries: the CSP, no MIME sniffing, no referrer (the
/// page's URL may hold the token's fragment until the page clears it), no framing, a
/// browsing context of its own (no window that opened it keeps a handle on it), and
/// no reading of its answers from another origin's page.
pub(crate) fn security_headers(h: &mut HeaderMap) {
    h.insert(
        header::HeaderName::from_static("cross-origin-opener-policy"),
        HeaderValue::from_static("same-origin"),
    );
    h.insert(
        header::HeaderName::from_static("cross-origin-resource-policy"),
        HeaderValue::from_static("same-origin"),
    );
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The most the three files may weigh together, uncompressed.
    const BUDGET: usize = 64 * 1024;

    #[test]
    fn the_page_fits_its_budget() {
        let total: usize = ASSETS.iter().map(|a| a.bytes.len()).sum();
        assert!(total <= BUDGET, "{total} bytes, budget {BUDGET}");
    }

    #[test]
    fn the_page_loads_nothing_from_elsewhere_and_runs_no_inline_code() {
        for a in ASSETS {
            let text = std::str::from_utf8(a.bytes).unwrap();
            for banned in [
                "http://",
                "https://",
                "innerHTML",
                "outerHTML",
                "insertAdjacentHTML",
                "eval(",
                "new Function",
                "document.write",
            ] {
                // the namespace of SVG is no fetch, and none is used
                assert!(!text.contains(banned), "{} holds {banned}", a.path);
            }
        }
        let html = std::str::from_utf8(find("/console").unwrap().bytes).unwrap();
        assert!(
            !html.contains("<script>") && !html.contains("style="),
            "inline code in the page"
        );
    }

    #[test]
    fn the_etag_is_strong_and_answers_304() {
        let a = find("/console/console.js").unwrap();
        let r = a.respond(&HeaderMap::new());
        assert_eq!(r.status(), StatusCode::OK);
        let etag = r.headers()[header::ETAG].to_str().unwrap().to_owned();
        assert!(etag.starts_with('"') && !etag.starts_with("W/"), "{etag}");
        let mut h = HeaderMap::new();
        h.insert(header::IF_NONE_MATCH, HeaderValue::from_str(&etag).unwrap());
        assert_eq!(a.respond(&h).status(), StatusCode::NOT_MODIFIED);
        assert_ne!(find("/console").unwrap().etag(), a.etag());
        assert_eq!(r.headers()[header::CONTENT_SECURITY_POLICY], CSP);
    }
}
