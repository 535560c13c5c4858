//! The local spool of `aep hook`: events wait here until a relay has taken them, so a
//! relay that is down or slow costs the agent nothing but the hook's time budget, and
//! the next hook (or `aep hook flush`) delivers them, in order, each once.
//!
//! One spool per relay URL (`spool/{url}/` in the hook directory): `events.jsonl`, the
//! events as one JSON line each, appended under `append.lock`; `offset`, how many of its
//! bytes a relay has taken; `rejected.jsonl`, what a relay refused for good. Delivery
//! holds `deliver.lock`, so one process at a time sends, from the offset on, whole
//! lines only (an append still being written is left for later), batches of at most
//! 500 events or 1 MiB, each `POST {url}/events` (AEP-0003 §3.2) given what is left of
//! the budget. The offset moves only after the relay's `2xx`: a hook killed between the
//! answer and the offset sends the same lines again, same ids, which the relay dedupes
//! on `(source, id)` (AEP-0001 §7.4). What a relay refuses for good (a `4xx`, aep-core's
//! `IngestRefusal`) is sent again one event at a time and only the events refused alone
//! go to `rejected.jsonl`; a refusal that is not about the events (a refused token, a
//! wrong URL or protocol version: `401`, `403`, `404`, `405`, `415`, `426`), a `5xx` or a
//! network failure stops delivery and keeps everything spooled. Once everything is delivered, the files
//! are emptied.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use aep::protocol::frame::IngestRefusal;

use crate::args::RelayArgs;
use crate::hookstore::{lock, write_atomic};

/// At most this many events per request.
const MAX_BATCH: usize = 500;
/// At most this many bytes per request.
const MAX_BATCH_BYTES: usize = 1 << 20;

/// One relay's spool.
#[derive(Debug, Clone)]
pub struct Spool {
    dir: PathBuf,
}

/// What one delivery pass did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Delivered {
    /// Events the relay took.
    pub sent: usize,
    /// Events the relay refused for good (kept in `rejected.jsonl`).
    pub rejected: usize,
    /// Events still waiting.
    pub pending: usize,
    /// Why delivery stopped early, if it did.
    pub stopped: Option<String>,
}

impl Spool {
    /// The spool in `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> Spool {
        Spool { dir: dir.into() }
    }

    fn events(&self) -> PathBuf {
        self.dir.join("events.jsonl")
    }

    fn offset_path(&self) -> PathBuf {
        self.dir.join("offset")
    }

    /// Appends events (each one JSON line) in order, synced, under the append lock.
    pub fn append(&self, lines: &[String], deadline: Instant) -> io::Result<()> {
        if lines.is_empty() {
            return Ok(());
        }
        let _guard = lock(&self.dir.join("append.lock"), deadline)?
            .ok_or_else(|| io::Error::new(io::ErrorKind::WouldBlock, "the spool stayed locked"))?;
        let mut bytes = Vec::with_capacity(lines.iter().map(|l| l.len() + 1).sum());
        for line in lines {
            bytes.extend_from_slice(line.as_bytes());
            bytes.push(b'\n');
        }
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.events())?;
        file.write_all(&bytes)?;
        file.sync_data()
    }

    fn offset(&self) -> u64 {
        fs::read_to_string(self.offset_path())
            .ok()
            .and_then(|t| t.trim().parse().ok())
            .unwrap_or(0)
    }

    fn set_offset(&self, offset: u64) -> io::Result<()> {
        write_atomic(&self.offset_path(), offset.to_string().as_bytes())
    }

    /// How many whole events wait to be delivered.
    pub fn pending(&self) -> usize {
        let Ok(mut file) = File::open(self.events()) else {
            return 0;
        };
        if file.seek(SeekFrom::Start(self.offset())).is_err() {
            return 0;
        }
        let mut rest = Vec::new();
        if file.read_to_end(&mut rest).is_err() {
            return 0;
        }
        rest.iter().filter(|b| **b == b'\n').count()
    }

    /// The next batch of whole lines from `offset`: the lines and the bytes they span.
    fn next_batch(&self, offset: u64) -> io::Result<(Vec<Vec<u8>>, u64)> {
        let mut file = match File::open(self.events()) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok((Vec::new(), 0)),
            Err(e) => return Err(e),
        };
        let len = file.metadata()?.len();
        if offset >= len {
            return Ok((Vec::new(), 0));
        }
        file.seek(SeekFrom::Start(offset))?;
        let mut buf = Vec::new();
        file.take(MAX_BATCH_BYTES as u64 * 2)
            .read_to_end(&mut buf)?;
        let mut lines = Vec::new();
        let mut used = 0usize;
        let mut start = 0usize;
        while let Some(i) = buf[start..].iter().position(|b| *b == b'\n') {
            let end = start + i + 1;
            let line = &buf[start..end - 1];
            // A lone line larger than a batch still goes (the relay decides); otherwise
            // the batch stops at its bounds.
            if !lines.is_empty()
                && (used + line.len() > MAX_BATCH_BYTES || lines.len() >= MAX_BATCH)
            {
                break;
            }
            if !line.iter().all(u8::is_ascii_whitespace) {
                lines.push(line.to_vec());
            }
            used = end;
            start = end;
            if used >= MAX_BATCH_BYTES {
                break;
            }
        }
        if lines.is_empty() && used == 0 && buf.len() as u64 >= MAX_BATCH_BYTES as u64 * 2 {
            // A line longer than twice a batch: read it whole, once.
            let mut file = File::open(self.events())?;
            file.seek(SeekFrom::Start(offset))?;
            let mut whole = Vec::new();
            let mut reader = io::BufReader::new(file);
            io::BufRead::read_until(&mut reader, b'\n', &mut whole)?;
            if whole.last() == Some(&b'\n') {
                let n = whole.len() as u64;
                whole.pop();
                return Ok((vec![whole], n));
            }
        }
        Ok((lines, used as u64))
    }

    /// Delivers what waits, until done or `deadline`; see the [module docs](self).
    pub async fn deliver(&self, relay: &RelayArgs, deadline: Instant) -> Delivered {
        let mut done = Delivered::default();
        let guard = match lock(&self.dir.join("deliver.lock"), deadline) {
            Ok(Some(g)) => g,
            Ok(None) => {
                done.stopped = Some("another process is delivering this spool".into());
                done.pending = self.pending();
                return done;
            }
            Err(e) => {
                done.stopped = Some(format!("{}: {e}", self.dir.display()));
                done.pending = self.pending();
                return done;
            }
        };
        let client = match relay.http_builder().build() {
            Ok(c) => c,
            Err(e) => {
                done.stopped = Some(format!("cannot build an HTTP client: {e}"));
                done.pending = self.pending();
                return done;
            }
        };
        let url = format!("{}/events", relay.base());
        let mut offset = self.offset();
        loop {
            let (lines, span) = match self.next_batch(offset) {
                Ok(b) => b,
                Err(e) => {
                    done.stopped = Some(format!("{}: {e}", self.events().display()));
                    break;
                }
            };
            if span == 0 {
                break;
            }
            match post(&client, &url, relay.token(), &lines, deadline).await {
                Post::Taken => done.sent += lines.len(),
                Post::Refused(status) if not_the_events(status) => {
                    done.stopped = Some(match status {
                        401 | 403 => format!(
                            "{url}: {status}: the relay refused the token; pass --token or set AEP_TOKEN"
                        ),
                        _ => format!("{url}: {status}: not an AEP 0.1 ingest; check --url"),
                    });
                    break;
                }
                Post::Refused(status) => {
                    // Refused for good: find which events, one at a time.
                    let mut refused = Vec::new();
                    let mut stop = None;
                    for line in &lines {
                        match post(
                            &client,
                            &url,
                            relay.token(),
                            std::slice::from_ref(line),
                            deadline,
                        )
                        .await
                        {
                            Post::Taken => done.sent += 1,
                            Post::Refused(s) if !not_the_events(s) => refused.push(line.clone()),
                            other => {
                                stop = Some(other.describe(&url, status));
                                break;
                            }
                        }
                    }
                    if let Some(why) = stop {
                        // Not all sorted out: send the batch again next time (the ones
                        // taken are deduped by the relay).
                        done.stopped = Some(why);
                        break;
                    }
                    if let Err(e) = self.reject(&refused) {
                        done.stopped = Some(format!("{}: {e}", self.dir.display()));
                        break;
                    }
                    done.rejected += refused.len();
                }
                other => {
                    done.stopped = Some(other.describe(&url, 0));
                    break;
                }
            }
            offset += span;
            if let Err(e) = self.set_offset(offset) {
                done.stopped = Some(format!("{}: {e}", self.offset_path().display()));
                break;
            }
        }
        self.compact(offset, deadline);
        drop(guard);
        done.pending = self.pending();
        done
    }

    /// Keeps what the relay refused for good.
    fn reject(&self, lines: &[Vec<u8>]) -> io::Result<()> {
        if lines.is_empty() {
            return Ok(());
        }
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("rejected.jsonl"))?;
        for line in lines {
            file.write_all(line)?;
            file.write_all(b"\n")?;
        }
        file.sync_data()
    }

    /// Empties the spool once everything in it is delivered (under the append lock, so
    /// no append is lost in between).
    fn compact(&self, offset: u64, deadline: Instant) {
        let len = fs::metadata(self.events()).map(|m| m.len()).unwrap_or(0);
        if offset == 0 || offset < len {
            return;
        }
        let Ok(Some(_guard)) = lock(&self.dir.join("append.lock"), deadline) else {
            return;
        };
        let len = fs::metadata(self.events()).map(|m| m.len()).unwrap_or(0);
        if len == offset && File::create(self.events()).is_ok() {
            let _ = self.set_offset(0);
        }
    }

    /// Where it is.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

/// A refusal that says nothing of the events (the token, the URL, the protocol
/// version): everything stays spooled until the configuration is right.
fn not_the_events(status: u16) -> bool {
    matches!(status, 401 | 403 | 404 | 405 | 415 | 426)
}

/// What one request came to.
enum Post {
    Taken,
    Refused(u16),
    Transient(String),
}

impl Post {
    fn describe(&self, url: &str, first: u16) -> String {
        match self {
            Post::Taken => format!("{url}: taken"),
            Post::Refused(s) => format!("{url}: {s} (after {first})"),
            Post::Transient(why) => format!("{url}: {why}; the events stay spooled"),
        }
    }
}

/// Sends `lines` in one request, within `deadline`.
async fn post(
    client: &reqwest::Client,
    url: &str,
    token: Option<&str>,
    lines: &[Vec<u8>],
    deadline: Instant,
) -> Post {
    let left = deadline.saturating_duration_since(Instant::now());
    if left < Duration::from_millis(1) {
        return Post::Transient("the time budget is spent".into());
    }
    let (body, content_type) = match lines {
        [one] => (one.clone(), "application/json"),
        many => {
            let mut b = Vec::with_capacity(many.iter().map(|l| l.len() + 1).sum());
            for l in many {
                b.extend_from_slice(l);
                b.push(b'\n');
            }
            (b, "application/x-ndjson")
        }
    };
    let mut req = client
        .post(url)
        .timeout(left)
        .header(reqwest::header::CONTENT_TYPE, content_type)
        .header("AEP-Version", aep::protocol::AEP_VERSION)
        .body(body);
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    match req.send().await {
        Ok(resp) if resp.status().is_success() => Post::Taken,
        Ok(resp) => {
            let status = resp.status().as_u16();
            if IngestRefusal::of_status(status).is_transient() {
                Post::Transient(format!("the relay answered {status}"))
            } else {
                Post::Refused(status)
            }
        }
        Err(e) if e.is_timeout() => {
            Post::Transient("the relay did not answer within the budget".into())
        }
        Err(e) => Post::Transient(format!("the relay is unreachable ({e})")),
    }
}
