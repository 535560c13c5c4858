//! A real headless Chromium under WebDriver, for the console's browser tests and bench:
//! Debian's `chromium` and `chromium-driver` (`AEP_CHROMIUM` and `AEP_CHROMEDRIVER`
//! name others). chromedriver is started on a free port and killed on drop; Chromium runs
//! headless in a new empty profile, with its background connections off (a closed
//! network refuses them). Where either is missing, [`Browser::missing`] says why, for
//! `external::skip_for`.

use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder};
use serde_json::json;

use crate::disk::TempDir;

fn chromium() -> String {
    std::env::var("AEP_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".to_owned())
}

fn chromedriver() -> String {
    std::env::var("AEP_CHROMEDRIVER").unwrap_or_else(|_| "/usr/bin/chromedriver".to_owned())
}

/// chromedriver, its Chromium session, and the profile directory they use.
pub struct Browser {
    /// The WebDriver session.
    pub client: Client,
    driver: Child,
    _profile: TempDir,
}

impl std::fmt::Debug for Browser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Browser")
            .field("driver", &self.driver.id())
            .finish()
    }
}

impl Browser {
    /// Why no browser can be started here, if none can (`apt-get install chromium
    /// chromium-driver` provides both).
    pub fn missing() -> Option<String> {
        for program in [chromium(), chromedriver()] {
            if let Some(why) = crate::external::program_missing(&program) {
                return Some(format!(
                    "{why}; install Debian's chromium and chromium-driver (or set AEP_CHROMIUM, AEP_CHROMEDRIVER)"
                ));
            }
        }
        None
    }

    /// Starts chromedriver and a headless Chromium session of `width` x `height`.
    pub async fn start(width: u32, height: u32) -> Result<Browser, String> {
        let profile = TempDir::new("chromium-profile");
        let mut last = String::new();
        // chromedriver takes a port number, not a listener: a port taken meanwhile by
        // someone else makes it exit, and the next free one is tried
        for _ in 0..5 {
            let port = TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .map_err(|e| e.to_string())?
                .port();
            let mut driver = Command::new(chromedriver())
                .arg(format!("--port={port}"))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .map_err(|e| format!("chromedriver cannot be started: {e}"))?;
            let deadline = Instant::now() + Duration::from_secs(20);
            let mut up = false;
            while Instant::now() < deadline {
                if let Ok(Some(status)) = driver.try_wait() {
                    last = format!("chromedriver exited ({status})");
                    break;
                }
                if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                    up = true;
                    break;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            if !up {
                let _ = driver.kill();
                let _ = driver.wait();
                continue;
            }
            let mut caps = serde_json::Map::new();
            caps.insert(
                "goog:chromeOptions".into(),
                json!({
                    "binary": chromium(),
                    "args": [
                        "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                        "--no-first-run", "--disable-background-networking",
                        "--disable-component-update", "--disable-sync",
                        "--disable-dev-shm-usage",
                        // performance.memory to the byte, for the bench's heap figure
                        "--enable-precise-memory-info",
                        "--force-device-scale-factor=1",
                        format!("--user-data-dir={}", profile.path().display()),
                        format!("--window-size={width},{height}"),
                    ],
                }),
            );
            let connector = hyper_util::client::legacy::connect::HttpConnector::new();
            match ClientBuilder::new(connector)
                .capabilities(caps)
                .connect(&format!("http://127.0.0.1:{port}"))
                .await
            {
                Ok(client) => {
                    return Ok(Browser {
                        client,
                        driver,
                        _profile: profile,
                    })
                }
                Err(e) => {
                    last = format!("no Chromium session: {e}");
                    let _ = driver.kill();
                    let _ = driver.wait();
                }
            }
        }
        Err(last)
    }

    /// The process id of chromedriver: Chromium and its renderers are its descendants
    /// (for a bench that reads the tab's memory from `/proc`).
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), String> {
    /// let browser = aep_test_support::browser::Browser::start(800, 600).await?;
    /// assert!(browser.driver_pid() > 0);
    /// # Ok(())
    /// # }
    /// ```
    pub fn driver_pid(&self) -> u32 {
        self.driver.id()
    }

    /// Ends the session (Chromium quits), then chromedriver.
    pub async fn close(mut self) {
        let _ = self.client.clone().close().await;
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}
