//! A real headless Chromium for end-to-end tests of the web dashboard, driven over WebDriver.
//!
//! [`ChromeDriver`] spawns `chromedriver` on a free loopback port with its own temporary
//! directory (log and browser profile) and kills it when dropped, like the Redis harness.
//! [`Browser`] opens one headless Chromium session through it with [`fantoccini`] and offers the
//! few steps a test needs: open a page, wait for a CSS selector, read text, click, type, take a
//! screenshot. Every wait polls every 50 ms up to [`WAIT`]; nothing sleeps for a fixed time.
//! Failures panic with what was awaited, the page's URL and the driver's log.
//!
//! The binaries come from `ASYNQ_CHROMEDRIVER_BIN` (default `chromedriver` on `PATH`) and
//! `ASYNQ_CHROMIUM_BIN` (default `/usr/bin/chromium`); `cargo xtask test` installs Debian's
//! `chromium` and `chromium-driver` when they are missing and sets both.
//! Everything stays on 127.0.0.1: the driver accepts local connections only, and the pages
//! under test are served on loopback.

use std::fs::File;
use std::future::Future;
use std::io::{Read as _, Write as _};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::elements::Element;
use fantoccini::{ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::{Value, json};

/// The environment variable naming the `chromedriver` binary.
pub const CHROMEDRIVER_ENV: &str = "ASYNQ_CHROMEDRIVER_BIN";

/// The environment variable naming the Chromium binary.
pub const CHROMIUM_ENV: &str = "ASYNQ_CHROMIUM_BIN";

/// The Chromium binary when [`CHROMIUM_ENV`] is unset: Debian's.
const DEFAULT_CHROMIUM: &str = "/usr/bin/chromium";

/// How long any wait of the harness may take before it panics: generous, because the test
/// machine may be busy compiling while a test runs.
pub const WAIT: Duration = Duration::from_secs(15);

/// How often waits poll.
const POLL: Duration = Duration::from_millis(50);

/// How long `chromedriver` may take to answer `GET /status` after it was spawned.
const DRIVER_READY_TIMEOUT: Duration = Duration::from_secs(15);

/// How many fresh ports to try when another process takes the one picked.
const PORT_ATTEMPTS: usize = 5;

/// The driver's own log file, inside its directory.
const LOG_FILE: &str = "chromedriver.log";

/// Where the process's stdout and stderr go.
const STDIO_FILE: &str = "stdio.log";

/// How many lines of the driver's log a panic message shows.
const LOG_TAIL_LINES: usize = 40;

/// The arguments every session's Chromium gets (besides its profile directory).
const CHROMIUM_ARGS: &[&str] = &["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"];

/// One `chromedriver` process on a loopback port, with its own temporary directory for its log
/// and the browser profiles. Dropping it kills the process and deletes the directory.
#[derive(Debug)]
pub struct ChromeDriver {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
}

impl ChromeDriver {
    /// Starts `chromedriver` on a free port and waits until it reports itself ready.
    pub fn start() -> Self {
        let bin = std::env::var_os(CHROMEDRIVER_ENV).filter(|v| !v.is_empty()).unwrap_or_else(|| "chromedriver".into());
        let dir = tempfile::Builder::new()
            .prefix("asynq-chromedriver-")
            .tempdir()
            .unwrap_or_else(|e| panic!("could not create a temporary directory for chromedriver: {e}"));
        let mut failures = Vec::new();
        for _ in 0..PORT_ATTEMPTS {
            let port = free_port();
            let stdio = File::create(dir.path().join(STDIO_FILE))
                .unwrap_or_else(|e| panic!("could not create chromedriver's stdio log: {e}"));
            let stderr = stdio.try_clone().unwrap_or_else(|e| panic!("could not share chromedriver's stdio log: {e}"));
            let mut child = Command::new(&bin)
                .arg(format!("--port={port}"))
                .arg(format!("--log-path={}", dir.path().join(LOG_FILE).display()))
                .stdin(Stdio::null())
                .stdout(stdio)
                .stderr(stderr)
                .spawn()
                .unwrap_or_else(|e| {
                    panic!(
                        "could not run {}: {e}. The browser tests need Chromium and chromedriver: run \
                         `cargo xtask test`, which installs them on Debian, or `apt-get install chromium \
                         chromium-driver`, or set {CHROMEDRIVER_ENV} and {CHROMIUM_ENV}.",
                        bin.to_string_lossy()
                    )
                });
            match wait_ready(&mut child, port) {
                Ok(()) => return Self { child, port, dir },
                Err(why) => {
                    // Most likely another process took the port; try a fresh one.
                    let _ = child.kill();
                    let _ = child.wait();
                    failures.push(format!("port {port}: {why}\n{}", driver_log(dir.path())));
                }
            }
        }
        panic!("chromedriver did not start in {PORT_ATTEMPTS} tries:\n{}", failures.join("\n"))
    }

    /// The port it listens on, on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `http://127.0.0.1:<port>`, the WebDriver endpoint.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Its temporary directory (logs, browser profiles).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// What the driver printed, and the end of its log, for panic messages.
    pub fn log(&self) -> String {
        driver_log(self.dir.path())
    }

    /// Ends a WebDriver session with a blocking request; chromedriver then quits its browser.
    fn end_session(&self, session_id: &str) {
        // Errors mean the session or the driver is already gone, which is the goal anyway.
        let _ = http(self.port, "DELETE", &format!("/session/{session_id}"));
    }
}

impl Drop for ChromeDriver {
    fn drop(&mut self) {
        // Fails only if it already exited.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A headless Chromium session on its own [`ChromeDriver`]. Dropping it ends the session (which
/// closes the browser) and then stops the driver.
#[derive(Debug)]
pub struct Browser {
    client: fantoccini::Client,
    session_id: Option<String>,
    driver: ChromeDriver,
}

impl Browser {
    /// Starts a driver and a browser with a 1280x900 window.
    pub async fn start() -> Self {
        Self::start_with_size(1280, 900).await
    }

    /// Starts a driver and a browser whose window is `width` x `height` pixels.
    pub async fn start_with_size(width: u32, height: u32) -> Self {
        let driver = tokio::task::spawn_blocking(ChromeDriver::start)
            .await
            .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
        let chromium =
            std::env::var(CHROMIUM_ENV).ok().filter(|v| !v.is_empty()).unwrap_or_else(|| DEFAULT_CHROMIUM.to_owned());
        let mut args: Vec<String> = CHROMIUM_ARGS.iter().map(|arg| (*arg).to_owned()).collect();
        args.push(format!("--window-size={width},{height}"));
        args.push(format!("--user-data-dir={}", driver.dir().join("profile").display()));
        let capabilities = json!({
            "browserName": "chrome",
            "goog:chromeOptions": { "binary": chromium, "args": args },
        });
        let Value::Object(capabilities) = capabilities else { unreachable!("a JSON object literal") };
        let client = ClientBuilder::new(HttpConnector::new())
            .capabilities(capabilities)
            .connect(&driver.url())
            .await
            .unwrap_or_else(|e| panic!("could not open a Chromium session ({chromium}): {e}\n{}", driver.log()));
        let session_id = client.session_id().await.ok().flatten();
        Self { client, session_id, driver }
    }

    /// The WebDriver client, for anything the helpers here do not cover.
    pub fn client(&self) -> &fantoccini::Client {
        &self.client
    }

    /// The driver, for its log.
    pub fn driver(&self) -> &ChromeDriver {
        &self.driver
    }

    /// Opens `url` and waits for the page to load.
    pub async fn goto(&self, url: &str) {
        if let Err(e) = self.client.goto(url).await {
            self.fail(&format!("could not open {url}: {e}")).await
        }
    }

    /// The current URL.
    pub async fn url(&self) -> String {
        self.client.current_url().await.map(String::from).unwrap_or_else(|e| format!("<unknown URL: {e}>"))
    }

    /// Polls `check` every 50 ms until it returns `Some`, for at most [`WAIT`]; panics naming
    /// `what` if it never does.
    pub async fn poll<T, F, Fut>(&self, what: &str, mut check: F) -> T
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Option<T>>,
    {
        let give_up = tokio::time::Instant::now() + WAIT;
        loop {
            if let Some(value) = check().await {
                return value;
            }
            if tokio::time::Instant::now() >= give_up {
                self.fail(&format!("timed out after {WAIT:?} waiting for: {what}")).await
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Waits until an element matches `css` and returns the first.
    pub async fn wait_for(&self, css: &str) -> Element {
        self.poll(&format!("an element matching `{css}`"), || async { self.client.find(Locator::Css(css)).await.ok() })
            .await
    }

    /// Waits until no element matches `css`.
    pub async fn wait_gone(&self, css: &str) {
        self.poll(&format!("no element matching `{css}`"), || async { (self.count(css).await == 0).then_some(()) })
            .await
    }

    /// Waits until the first element matching `css` has text for which `accept` holds, and
    /// returns that text.
    pub async fn wait_for_text(&self, css: &str, what: &str, accept: impl Fn(&str) -> bool) -> String {
        self.poll(&format!("`{css}` to show {what}"), || async {
            let element = self.client.find(Locator::Css(css)).await.ok()?;
            let text = element.text().await.ok()?;
            accept(&text).then_some(text)
        })
        .await
    }

    /// Waits until the first element matching `css` is displayed (present, not hidden, with a
    /// size).
    pub async fn wait_visible(&self, css: &str) -> Element {
        self.poll(&format!("a visible element matching `{css}`"), || async {
            let element = self.client.find(Locator::Css(css)).await.ok()?;
            element.is_displayed().await.ok()?.then_some(element)
        })
        .await
    }

    /// Whether the first element matching `css` is displayed now (no waiting).
    pub async fn is_visible(&self, css: &str) -> bool {
        match self.client.find(Locator::Css(css)).await {
            Ok(element) => element.is_displayed().await.unwrap_or(false),
            Err(_) => false,
        }
    }

    /// How many elements match `css` now (no waiting).
    pub async fn count(&self, css: &str) -> usize {
        self.client.find_all(Locator::Css(css)).await.map_or(0, |found| found.len())
    }

    /// The visible text of the first element matching `css`, once there is one.
    pub async fn text(&self, css: &str) -> String {
        self.poll(&format!("the text of `{css}`"), || async {
            self.client.find(Locator::Css(css)).await.ok()?.text().await.ok()
        })
        .await
    }

    /// The value of attribute `name` of the first element matching `css`, once there is one.
    pub async fn attr(&self, css: &str, name: &str) -> Option<String> {
        self.poll(&format!("attribute `{name}` of `{css}`"), || async {
            self.client.find(Locator::Css(css)).await.ok()?.attr(name).await.ok()
        })
        .await
    }

    /// Clicks the first element matching `css` once there is one. A live refresh may replace
    /// the element between finding and clicking it, so a stale element is looked up again.
    pub async fn click(&self, css: &str) {
        self.poll(&format!("a click on `{css}`"), || async {
            self.client.find(Locator::Css(css)).await.ok()?.click().await.ok()
        })
        .await
    }

    /// Replaces the value of the first input matching `css` with `text`, as if typed.
    pub async fn fill(&self, css: &str, text: &str) {
        self.poll(&format!("typing into `{css}`"), || async {
            let input = self.client.find(Locator::Css(css)).await.ok()?;
            input.clear().await.ok()?;
            input.send_keys(text).await.ok()
        })
        .await
    }

    /// Runs `script` (a function body; `arguments[i]` are `args`) in the page and returns what
    /// it returns.
    pub async fn eval(&self, script: &str, args: Vec<Value>) -> Value {
        match self.client.execute(script, args).await {
            Ok(value) => value,
            Err(e) => self.fail(&format!("script failed: {e}\n{script}")).await,
        }
    }

    /// Resizes the window so that the page's viewport is exactly `width` x `height` CSS pixels
    /// (headless Chromium's window has no frame, but set it from what the page reports anyway).
    pub async fn set_viewport(&self, width: u32, height: u32) {
        let (mut window_width, mut window_height) = (width, height);
        for _ in 0..3 {
            if let Err(e) = self.client.set_window_size(window_width, window_height).await {
                self.fail(&format!("could not resize the window to {window_width}x{window_height}: {e}")).await
            }
            let inner = self.eval("return [window.innerWidth, window.innerHeight];", vec![]).await;
            let measured = |i: usize| inner[i].as_u64().and_then(|n| u32::try_from(n).ok()).unwrap_or(0);
            let (inner_width, inner_height) = (measured(0), measured(1));
            if (inner_width, inner_height) == (width, height) {
                return;
            }
            window_width = (window_width + width).saturating_sub(inner_width);
            window_height = (window_height + height).saturating_sub(inner_height);
        }
        self.fail(&format!("could not get a {width}x{height} viewport")).await
    }

    /// Saves a PNG screenshot of the viewport at `path`, creating its directory.
    pub async fn screenshot(&self, path: &Path) {
        let png = match self.client.screenshot().await {
            Ok(png) => png,
            Err(e) => self.fail(&format!("could not take a screenshot: {e}")).await,
        };
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap_or_else(|e| panic!("could not create {}: {e}", parent.display()));
        }
        std::fs::write(path, png).unwrap_or_else(|e| panic!("could not write {}: {e}", path.display()));
    }

    /// Panics with `why`, the current URL and the driver's log.
    async fn fail(&self, why: &str) -> ! {
        let url = self.url().await;
        panic!("browser test failed: {why}\n--- page: {url}\n{}", self.driver.log())
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if let Some(session_id) = &self.session_id {
            self.driver.end_session(session_id);
        }
    }
}

/// Where tests save screenshots: `screenshots/` in the Cargo target directory
/// (`CARGO_TARGET_DIR` when set, otherwise the workspace's `target/`).
pub fn screenshot_dir() -> PathBuf {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let target = match std::env::var_os("CARGO_TARGET_DIR").filter(|v| !v.is_empty()) {
        Some(dir) => workspace.join(dir),
        None => workspace.join("target"),
    };
    target.join("screenshots")
}

/// Polls `GET /status` on `port` until the driver says it is ready, the process exits, or time
/// is up.
fn wait_ready(child: &mut Child, port: u16) -> Result<(), String> {
    let give_up = Instant::now() + DRIVER_READY_TIMEOUT;
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!("chromedriver exited with {status}"));
        }
        if let Ok(reply) = http(port, "GET", "/status") {
            let ready = reply
                .split_once("\r\n\r\n")
                .and_then(|(_, body)| serde_json::from_str::<Value>(body).ok())
                .is_some_and(|body| body["value"]["ready"] == Value::Bool(true));
            if ready {
                return Ok(());
            }
        }
        if Instant::now() >= give_up {
            return Err(format!("no ready answer to GET /status within {DRIVER_READY_TIMEOUT:?}"));
        }
        std::thread::sleep(POLL);
    }
}

/// The driver's stdout/stderr and the last lines of its log, read from its directory.
fn driver_log(dir: &Path) -> String {
    let read = |name: &str| {
        std::fs::read(dir.join(name)).map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default()
    };
    let log = read(LOG_FILE);
    // A whole session's log is long; its end says what went wrong.
    let lines: Vec<&str> = log.lines().collect();
    let tail = lines[lines.len().saturating_sub(LOG_TAIL_LINES)..].join("\n");
    format!("--- chromedriver stdout/stderr:\n{}\n--- {LOG_FILE} (last lines):\n{tail}", read(STDIO_FILE).trim_end())
}

/// A port that was free a moment ago on 127.0.0.1.
fn free_port() -> u16 {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .unwrap_or_else(|e| panic!("could not find a free port: {e}"))
}

/// Sends a body-less HTTP/1.1 request to `127.0.0.1:port` and returns the reply's head and body.
/// chromedriver keeps connections open whatever the request says, so the reply ends where its
/// `Content-Length` says, not at end of stream.
fn http(port: u16, method: &str, path: &str) -> std::io::Result<String> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(1))?;
    // Ending a session waits for the browser to quit, which takes a moment.
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )?;
    let mut reply = Vec::new();
    let mut chunk = [0_u8; 4096];
    loop {
        let read = stream.read(&mut chunk)?;
        reply.extend_from_slice(&chunk[..read]);
        if read == 0 || reply_complete(&reply) {
            return Ok(String::from_utf8_lossy(&reply).into_owned());
        }
    }
}

/// Whether `reply` holds a whole HTTP response: its head, and as many body bytes as its
/// `Content-Length` announces (none when it announces nothing).
fn reply_complete(reply: &[u8]) -> bool {
    let Some(head_end) = reply.windows(4).position(|window| window == b"\r\n\r\n") else { return false };
    let head = String::from_utf8_lossy(&reply[..head_end]);
    let length = head
        .lines()
        .filter_map(|line| line.split_once(':'))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, value)| value.trim().parse::<usize>().ok())
        .unwrap_or(0);
    reply.len() >= head_end + 4 + length
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::Router;
    use axum::response::Html;
    use axum::routing::get;

    /// A page whose button changes a counter only after a script ran, so waiting is needed.
    const PAGE: &str = r#"<!doctype html><html><head><title>harness</title></head><body>
<p id="count">0</p><button id="more" onclick="setTimeout(() => {
  const p = document.getElementById('count'); p.textContent = String(Number(p.textContent) + 1);
  if (p.textContent === '2') { const done = document.createElement('p'); done.id = 'done'; done.textContent = 'two'; document.body.append(done); }
}, 100)">more</button><input id="name"></body></html>"#;

    #[test]
    fn replies_end_where_their_content_length_says() {
        assert!(!reply_complete(b"HTTP/1.1 200 OK\r\nContent-Length:5\r\n"));
        assert!(!reply_complete(b"HTTP/1.1 200 OK\r\nContent-Length:5\r\n\r\n{}"));
        assert!(reply_complete(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}"));
        assert!(reply_complete(b"HTTP/1.1 204 No Content\r\n\r\n"));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn drives_a_page_served_on_loopback() {
        let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.expect("bind");
        let addr = listener.local_addr().expect("address");
        let app = Router::new().route("/", get(|| async { Html(PAGE) }));
        let server = tokio::spawn(async move { axum::serve(listener, app).await });

        let browser = Browser::start().await;
        browser.goto(&format!("http://{addr}/")).await;
        assert_eq!(browser.text("#count").await, "0");
        browser.click("#more").await;
        browser.wait_for_text("#count", "1", |text| text == "1").await;
        browser.click("button#more").await;
        assert_eq!(browser.wait_for("#done").await.text().await.expect("text"), "two");
        assert_eq!(browser.count("p").await, 2);
        browser.fill("#name", "asynq").await;
        assert_eq!(browser.eval("return document.getElementById('name').value;", vec![]).await, json!("asynq"));

        browser.set_viewport(640, 400).await;
        let path = browser.driver().dir().join("page.png");
        browser.screenshot(&path).await;
        let png = std::fs::read(&path).expect("screenshot written");
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        // IHDR: width and height, big-endian, right after the signature and chunk header.
        let size = |at: usize| u32::from_be_bytes(png[at..at + 4].try_into().expect("4 bytes"));
        assert_eq!((size(16), size(20)), (640, 400));
        server.abort();
    }
}
