//! The live exporter (`mcp wrap --otlp-endpoint URL`): the session's spans sent to an OTLP/HTTP
//! endpoint while it runs, from a thread of its own, through a bounded queue that never blocks
//! the proxy.
//!
//! The decision-log writer offers each line it wrote ([`Tap::offer`]): one copy into the queue
//! with `try_send`, or, when the queue is full, the span is dropped and counted — the proxy
//! never waits on the network. The exporter thread turns lines into spans with the encoder of
//! `capture export --format otlp-json` (same names, attributes and ids) and posts them in
//! batches. At the session's end, [`LiveExporter::finish`] queues the session span and waits at
//! most a bounded time for the thread to deliver; whatever was not delivered by then (queue
//! full, refused or unreachable endpoint, still unsent) is counted as dropped. The counts go
//! into the stop record (`otlp_export`) and a loss onto stderr; the capture stays the record of
//! truth.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError, sync_channel};
use std::time::Duration;

use super::encode::{Resource, SessionSpan, push_request};
use super::http::{Endpoint, post};
use crate::decision_record::parse_line;
use crate::evidence::decision_log::LineTap;
use crate::outcome::OtlpExportCounts;

/// Spans the queue holds at most (a line is a few hundred bytes: under 1 MiB queued).
pub(crate) const QUEUE_SPANS: usize = 2048;
/// Spans sent in one request at most.
const BATCH_SPANS: usize = 256;
/// Each of connecting, writing and reading one request takes at most this long.
const REQUEST_TIMEOUT: Duration = Duration::from_millis(800);
/// The session's end waits at most this long for the exporter (docs/decisions.md).
pub(crate) const FINISH_WAIT: Duration = Duration::from_secs(1);

/// What goes through the queue.
enum Item {
    /// A decision-log line as written (without its newline).
    Line(Vec<u8>),
    /// The session span, last.
    End(OwnedSession),
}

/// The session span's fields, owned (the thread outlives the borrow).
#[derive(Debug, Clone, Default)]
pub(crate) struct OwnedSession {
    pub(crate) session_id: String,
    pub(crate) start: String,
    pub(crate) end: String,
    pub(crate) policy_sha256: String,
    pub(crate) policy_name: Option<String>,
    pub(crate) session_end: String,
}

/// The counters the proxy side and the thread share.
#[derive(Default)]
struct Counters {
    /// Spans offered (lines, and the session span).
    offered: AtomicU64,
    /// Spans dropped because the queue was full.
    queue_full: AtomicU64,
    /// Spans in requests the endpoint answered with 2xx.
    exported: AtomicU64,
    /// Spans in requests that failed (refused, unreachable, timed out).
    failed: AtomicU64,
    /// The session's end stopped waiting: the thread sends nothing more.
    abandoned: AtomicBool,
}

/// What the decision-log writer offers lines to.
pub(crate) struct Tap {
    tx: SyncSender<Item>,
    counters: Arc<Counters>,
}

impl LineTap for Tap {
    fn offer(&self, line: &[u8]) {
        self.counters.offered.fetch_add(1, Ordering::Relaxed);
        let line = line.strip_suffix(b"\n").unwrap_or(line).to_vec();
        if self.tx.try_send(Item::Line(line)).is_err() {
            self.counters.queue_full.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The running exporter.
pub(crate) struct LiveExporter {
    tx: SyncSender<Item>,
    counters: Arc<Counters>,
    done: Receiver<()>,
    endpoint: Endpoint,
}

/// What the live export did, for the stop record and the stderr line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LiveReport {
    /// The stop record's counts.
    pub(crate) counts: OtlpExportCounts,
    /// Dropped because the queue was full.
    pub(crate) queue_full: u64,
    /// In requests that failed.
    pub(crate) failed: u64,
}

impl LiveReport {
    /// The stderr line when spans were lost (`None` when every span was delivered).
    pub(crate) fn loss_message(&self, url: &str) -> Option<String> {
        let c = self.counts;
        (c.dropped > 0).then(|| {
            format!(
                "OTLP export to {url}: {} of {} spans not delivered ({} dropped with the queue \
                 full, {} in requests refused or failed, {} unsent when the session ended); \
                 the capture holds every decision",
                c.dropped,
                c.spans,
                self.queue_full,
                self.failed,
                c.dropped.saturating_sub(self.queue_full + self.failed)
            )
        })
    }
}

/// Starts the exporter thread for `endpoint`, with the resource every request names.
///
/// # Errors
/// The thread could not be started.
pub(crate) fn start(endpoint: Endpoint, server_id: String) -> std::io::Result<(LiveExporter, Tap)> {
    start_with(endpoint, server_id, QUEUE_SPANS)
}

/// [`start`] with a queue of `queue` spans.
fn start_with(
    endpoint: Endpoint,
    server_id: String,
    queue: usize,
) -> std::io::Result<(LiveExporter, Tap)> {
    let (tx, rx) = sync_channel(queue);
    let (done_tx, done) = sync_channel(1);
    let counters = Arc::new(Counters::default());
    let thread_counters = counters.clone();
    let thread_endpoint = endpoint.clone();
    std::thread::Builder::new()
        .name("assay-otlp".into())
        .spawn(move || {
            run(&rx, &thread_endpoint, &server_id, &thread_counters);
            let _ = done_tx.send(());
        })?;
    let tap = Tap {
        tx: tx.clone(),
        counters: counters.clone(),
    };
    Ok((
        LiveExporter {
            tx,
            counters,
            done,
            endpoint,
        },
        tap,
    ))
}

impl LiveExporter {
    /// The endpoint's URL, for messages.
    pub(crate) fn url(&self) -> String {
        self.endpoint.url()
    }

    /// Queues the session span, then waits at most [`FINISH_WAIT`] for the thread to deliver
    /// what it holds; returns the counts (what is not delivered by then is dropped).
    pub(crate) fn finish(self, session: OwnedSession) -> LiveReport {
        let c = &self.counters;
        c.offered.fetch_add(1, Ordering::Relaxed);
        match self.tx.try_send(Item::End(session)) {
            Ok(()) => {}
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                c.queue_full.fetch_add(1, Ordering::Relaxed);
                // The thread learns of the end after its current request.
                c.abandoned.store(true, Ordering::Relaxed);
            }
        }
        match self.done.recv_timeout(FINISH_WAIT) {
            Ok(()) | Err(RecvTimeoutError::Disconnected | RecvTimeoutError::Timeout) => {}
        }
        // From here on the thread sends nothing more (it may finish the request under way).
        c.abandoned.store(true, Ordering::Relaxed);
        let spans = c.offered.load(Ordering::Relaxed);
        let exported = c.exported.load(Ordering::Relaxed).min(spans);
        LiveReport {
            counts: OtlpExportCounts {
                spans,
                exported,
                dropped: spans - exported,
            },
            queue_full: c.queue_full.load(Ordering::Relaxed),
            failed: c.failed.load(Ordering::Relaxed),
        }
    }
}

/// The exporter thread: batches of lines (and the session span at the end) posted as they come.
fn run(rx: &Receiver<Item>, endpoint: &Endpoint, server_id: &str, c: &Counters) {
    let resource = Resource {
        server_id: Some(server_id),
        producer_version: Some(env!("CARGO_PKG_VERSION")),
        capture: None,
        verdict: None,
    };
    let mut lines: Vec<Vec<u8>> = Vec::with_capacity(BATCH_SPANS);
    loop {
        let Ok(first) = rx.recv() else { return };
        let mut end = None;
        let mut next = Some(first);
        while let Some(item) = next.take() {
            match item {
                Item::Line(l) => lines.push(l),
                Item::End(s) => end = Some(s),
            }
            if lines.len() < BATCH_SPANS && end.is_none() {
                next = rx.try_recv().ok();
            }
        }
        if c.abandoned.load(Ordering::Relaxed) {
            return;
        }
        let n = lines.len() as u64 + u64::from(end.is_some());
        let mut body = Vec::with_capacity(512 * lines.len() + 1024);
        push_request(&mut body, &resource, |spans| {
            if let Some(s) = &end {
                spans.push_session_span(&SessionSpan {
                    session_id: &s.session_id,
                    start: Some(&s.start),
                    end: Some(&s.end),
                    policy_sha256: Some(&s.policy_sha256),
                    policy_name: s.policy_name.as_deref(),
                    session_end: Some(&s.session_end),
                    verdict: None,
                });
            }
            for l in &lines {
                // Lines this process's writer formatted: always readable.
                if let Some(r) = std::str::from_utf8(l).ok().and_then(|t| parse_line(t).ok()) {
                    spans.push_record_span(&r);
                }
            }
        });
        lines.clear();
        match post(endpoint, &body, REQUEST_TIMEOUT) {
            Ok(code) if (200..300).contains(&code) => c.exported.fetch_add(n, Ordering::Relaxed),
            _ => c.failed.fetch_add(n, Ordering::Relaxed),
        };
        if end.is_some() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;
    use std::time::Instant;

    /// A full queue drops and counts instead of waiting, and the end waits its bound only.
    #[test]
    fn a_full_queue_drops_and_counts_and_the_end_is_bounded() {
        // Accepts and never answers: the first request holds the thread for its timeout.
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (connected_tx, connected) = std::sync::mpsc::channel();
        let hold = std::thread::spawn(move || {
            let mut incoming = listener.incoming();
            let first = incoming.next();
            let _ = connected_tx.send(());
            let second = incoming.next();
            drop((first, second));
        });
        let endpoint = Endpoint::parse(&url).unwrap();
        let (exporter, tap) = start_with(endpoint, "t".into(), 4).unwrap();
        // The first line is the first request's whole batch: the thread has taken it once it
        // connected (an event, not a sleep), and it is held there while the rest is offered.
        tap.offer(b"{}\n");
        connected
            .recv_timeout(Duration::from_secs(30))
            .expect("the exporter connects");
        let t0 = Instant::now();
        for _ in 1..500 {
            tap.offer(b"{}\n");
        }
        // Offering never waited on the network.
        assert!(
            t0.elapsed() < Duration::from_millis(200),
            "{:?}",
            t0.elapsed()
        );
        let t1 = Instant::now();
        let report = exporter.finish(OwnedSession::default());
        assert!(
            t1.elapsed() < FINISH_WAIT + Duration::from_millis(300),
            "{:?}",
            t1.elapsed()
        );
        assert_eq!(report.counts.spans, 501);
        assert_eq!(report.counts.exported, 0);
        assert_eq!(report.counts.dropped, 501);
        assert!(report.queue_full >= 490, "{report:?}");
        let msg = report.loss_message("http://x/v1/traces").unwrap();
        assert!(
            msg.starts_with("OTLP export to http://x/v1/traces: 501 of 501 spans not delivered"),
            "{msg}"
        );
        drop(tap);
        let _ = hold;
    }
}
