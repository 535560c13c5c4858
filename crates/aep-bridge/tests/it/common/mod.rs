//! A scripted HTTP endpoint for the exporters' tests: it records every request and
//! answers the n-th with the status the script gives, or never answers at all.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aep_test_support::task::AbortOnDrop;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

/// One request as received.
#[derive(Debug, Clone)]
pub struct Received {
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Received {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// What the endpoint does with the n-th request (from 0).
#[derive(Debug, Clone, Copy)]
pub enum Answer {
    Status(u16),
    /// A status with a `Retry-After` header of the value given.
    RetryAfter(u16, &'static str),
    /// A status announcing a body of a gigabyte, of which it sends the given number of
    /// bytes and then nothing more (the connection stays open).
    StallAfter(u16, usize),
    /// Reads the request and never answers (the connection stays open).
    Never,
}

pub struct Endpoint {
    pub url: String,
    pub requests: mpsc::UnboundedReceiver<Received>,
    _task: AbortOnDrop,
}

impl Endpoint {
    /// Starts on 127.0.0.1:0, keeping the bound listener.
    pub async fn start(script: impl Fn(usize) -> Answer + Send + Sync + 'static) -> Endpoint {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (tx, requests) = mpsc::unbounded_channel();
        let script = Arc::new(script);
        let count = Arc::new(Mutex::new(0usize));
        let _task = AbortOnDrop::spawn(async move {
            loop {
                let Ok((mut socket, _)) = listener.accept().await else {
                    return;
                };
                let (tx, script, count) = (tx.clone(), script.clone(), count.clone());
                tokio::spawn(async move {
                    while let Some(request) = read_request(&mut socket).await {
                        let n = {
                            let mut c = count.lock().unwrap();
                            *c += 1;
                            *c - 1
                        };
                        let _ = tx.send(request);
                        let (status, extra) = match script(n) {
                            Answer::Never => {
                                tokio::time::sleep(Duration::from_secs(3600)).await;
                                return;
                            }
                            Answer::Status(status) => (status, String::new()),
                            Answer::RetryAfter(status, after) => {
                                (status, format!("retry-after: {after}\r\n"))
                            }
                            Answer::StallAfter(status, sent) => {
                                let head = format!(
                                    "HTTP/1.1 {status} X\r\ncontent-length: 1000000000\r\n\r\n"
                                );
                                let _ = socket.write_all(head.as_bytes()).await;
                                let _ = socket.write_all(&vec![0u8; sent]).await;
                                tokio::time::sleep(Duration::from_secs(3600)).await;
                                return;
                            }
                        };
                        let head =
                            format!("HTTP/1.1 {status} X\r\n{extra}content-length: 0\r\n\r\n");
                        if socket.write_all(head.as_bytes()).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        Endpoint {
            url,
            requests,
            _task,
        }
    }

    /// Everything received so far.
    pub fn drain(&mut self) -> Vec<Received> {
        let mut out = Vec::new();
        while let Ok(r) = self.requests.try_recv() {
            out.push(r);
        }
        out
    }
}

/// Reads one HTTP/1.1 request with a `content-length` body; `None` at the end.
async fn read_request(socket: &mut tokio::net::TcpStream) -> Option<Received> {
    let mut buf = Vec::new();
    let head_end = loop {
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        let mut chunk = [0u8; 4096];
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let path = lines.next()?.split(' ').nth(1)?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let len: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = buf[head_end..].to_vec();
    while body.len() < len {
        let mut chunk = vec![0u8; len - body.len()];
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Some(Received {
        path,
        headers,
        body,
    })
}

pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/conformance")
}

pub use aep_test_support::golden::events as golden;

/// Un-gzips a body.
pub fn gunzip(body: &[u8]) -> Vec<u8> {
    use std::io::Read;
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(body)
        .read_to_end(&mut out)
        .unwrap();
    out
}
