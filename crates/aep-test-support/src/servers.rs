//! Servers that misbehave on purpose, on `127.0.0.1:0`, stopped when dropped.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use crate::task::AbortOnDrop;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// A TCP server that accepts connections and never answers.
#[derive(Debug)]
pub struct Silent {
    /// `http://127.0.0.1:PORT`
    pub url: String,
    _task: AbortOnDrop,
}

impl Silent {
    /// Starts it on the current runtime.
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let _task = AbortOnDrop::spawn(async move {
            let mut held = Vec::new();
            while let Ok((sock, _)) = listener.accept().await {
                held.push(sock);
            }
        });
        Silent {
            url: format!("http://{addr}"),
            _task,
        }
    }
}

/// A scripted HTTP server: `respond(request)` (head and body) gives the whole raw
/// response, after which the connection is closed.
#[derive(Debug)]
pub struct Scripted {
    /// `http://127.0.0.1:PORT`
    pub url: String,
    /// Every request received, head and body.
    pub requests: Arc<Mutex<Vec<String>>>,
    _task: AbortOnDrop,
}

impl Scripted {
    /// Starts it on the current runtime.
    pub async fn start(respond: impl Fn(&str) -> Vec<u8> + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr: SocketAddr = listener.local_addr().unwrap();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = requests.clone();
        let respond = Arc::new(respond);
        let _task = AbortOnDrop::spawn(async move {
            while let Ok((mut sock, _)) = listener.accept().await {
                let seen = seen.clone();
                let respond = respond.clone();
                tokio::spawn(async move {
                    let Some(request) = read_request(&mut sock).await else {
                        return;
                    };
                    seen.lock().unwrap().push(request.clone());
                    let out = respond(&request);
                    let _ = sock.write_all(&out).await;
                    let _ = sock.shutdown().await;
                });
            }
        });
        Scripted {
            url: format!("http://{addr}"),
            requests,
            _task,
        }
    }
}

/// One HTTP/1.1 request, head and `content-length` body; `None` if the peer left.
async fn read_request(sock: &mut tokio::net::TcpStream) -> Option<String> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let end = loop {
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        match sock.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    };
    let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
    let len: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    while buf.len() < end + len {
        match sock.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    Some(String::from_utf8_lossy(&buf).into_owned())
}

/// An SSE response with `body`, then the connection closed.
///
/// ```
/// let r = aep_test_support::servers::sse_response(": ping\n\n");
/// assert!(String::from_utf8(r).unwrap().contains("text/event-stream"));
/// ```
pub fn sse_response(body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// A bodyless response with `status`.
pub fn status_response(status: u16) -> Vec<u8> {
    format!("HTTP/1.1 {status} X\r\ncontent-length: 0\r\nconnection: close\r\n\r\n").into_bytes()
}
