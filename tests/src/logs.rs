//! Captures what a test binary logs through `tracing`, for tests that read log lines.

use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};

/// Everything logged in this test binary since the first [`capture_logs`], as plain text.
#[derive(Debug)]
pub struct CapturedLogs {
    buffer: Arc<Mutex<Vec<u8>>>,
}

impl CapturedLogs {
    /// The lines logged so far.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.buffer.lock().expect("log buffer lock poisoned")).into_owned()
    }
}

/// Installs, on the first call in a test binary, a global subscriber that writes every event at
/// `level` or above to a buffer; later calls return the same capture whatever their level.
pub fn capture_logs(level: tracing::Level) -> &'static CapturedLogs {
    static LOGS: OnceLock<CapturedLogs> = OnceLock::new();
    LOGS.get_or_init(|| {
        let buffer = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&buffer);
        let subscriber = tracing_subscriber::fmt()
            .with_ansi(false)
            .with_max_level(level)
            .with_writer(move || LogWriter(Arc::clone(&sink)))
            .finish();
        tracing::subscriber::set_global_default(subscriber).expect("no other subscriber in this binary");
        CapturedLogs { buffer }
    })
}

/// A writer appending to the shared log buffer.
struct LogWriter(Arc<Mutex<Vec<u8>>>);

impl Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("log buffer lock poisoned").extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
