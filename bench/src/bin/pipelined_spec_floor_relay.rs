//! The spec floor (`spec-floor-relay`: the least SPEC §4.1 asks of every `tools/call` line — the
//! line read as JSON, the SHA-256 of its arguments, a 705-byte log line written with one
//! write(2) before the line is forwarded, the SHA-256 of the log's prefix) spread over threads
//! as a proxy on two CPUs would spread it, to find the least wall time that work can take:
//!
//! - the reading thread reads each client line, hashes its arguments (raw, not canonicalized)
//!   and builds its log line into a batch (about 128 KiB of lines and log lines);
//! - the writing thread writes each log line with one write(2), then forwards the client line
//!   (buffered, flushed when no batch is waiting), and hands the batch to
//! - the hashing thread, which feeds the log lines to the SHA-256 of the log's prefix;
//! - a fourth thread copies the server's output back, as every relay here does.
//!
//! Batches go through bounded channels (two in flight), as the wrapper's do. Nothing is checked
//! beyond serde_json's syntax: no strict keys, no policy. A proxy that does what the SPEC asks
//! of every call, pipelined this way, takes at least this long; its wall over the hash floor's
//! says how far below the hash floor's wall the mandated work can be hidden on this machine.
//!
//! Usage: pipelined-spec-floor-relay LOGFILE -- COMMAND [ARGS...]
//!
//! The sizes are the plain policy's on the throughput session; the environment sets others, to
//! price the bytes another policy must write: `FLOOR_RECORD` (the log line's length, 705),
//! and for every client line asking `tools/list`, `FLOOR_LISTING_EVENT` bytes more in the log (a
//! listing event; 0: none) and `FLOOR_STDERR` bytes on stderr (the line saying what was hidden;
//! 0: none), each with one write(2) of its own.

#[path = "../relay/mod.rs"]
#[allow(dead_code)]
mod relay;

use std::fs::OpenOptions;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::process::ExitCode;
use std::sync::mpsc::{Receiver, SyncSender, TryRecvError, sync_channel};

/// The log line's length, newline included (the wrapper's decision line for these calls).
const RECORD: usize = 705;

/// The bytes written per client line (see the usage).
#[derive(Clone, Copy)]
struct Sizes {
    record: usize,
    listing_event: usize,
    stderr: usize,
}

impl Sizes {
    fn from_env() -> Sizes {
        let get = |name: &str, default: usize| {
            std::env::var(name)
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(default)
        };
        Sizes {
            record: get("FLOOR_RECORD", RECORD).max(8),
            listing_event: get("FLOOR_LISTING_EVENT", 0),
            stderr: get("FLOOR_STDERR", 0),
        }
    }
}
/// A batch is handed on once its arena holds this many bytes.
const BATCH_BYTES: usize = 128 * 1024;

/// Client lines and their log lines, in order: `(line end, record end, listing)` offsets into
/// `bytes`; `listing`: the line asks `tools/list`.
#[derive(Default)]
struct Batch {
    bytes: Vec<u8>,
    items: Vec<(usize, usize, bool)>,
}

/// Appends `line` and its log line to `batch`.
fn add(batch: &mut Batch, line: &[u8], seq: u64, record: usize) -> io::Result<()> {
    let digest = relay::arguments_sha256(line).unwrap_or([0; 32]);
    let b = &mut batch.bytes;
    b.extend_from_slice(line);
    let line_end = b.len();
    write!(b, "{{\"seq\":{seq},\"bytes\":{},\"sha\":\"", line.len())?;
    for x in digest {
        write!(b, "{x:02x}")?;
    }
    b.extend_from_slice(b"\",\"pad\":\"");
    while b.len() - line_end < record - 3 {
        b.push(b'x');
    }
    b.extend_from_slice(b"\"}\n");
    let listing = memmem(line, b"\"tools/list\"");
    batch.items.push((line_end, b.len(), listing));
    Ok(())
}

fn memmem(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// A line of `n` bytes (newline included) saying `what`.
fn padded(what: &str, n: usize) -> Vec<u8> {
    let mut v = what.as_bytes().to_vec();
    v.resize(n.saturating_sub(1), b'x');
    v.push(b'\n');
    v
}

/// Writes each batch's log lines (one write(2) each) and forwards its client lines.
fn write_batches(
    batches: Receiver<Batch>,
    hash: SyncSender<Batch>,
    log: &mut std::fs::File,
    to_child: &mut impl Write,
    sizes: Sizes,
) -> io::Result<()> {
    let event = padded("{\"listing\":\"", sizes.listing_event);
    let said = padded("hidden: ", sizes.stderr);
    let mut stderr = io::stderr().lock();
    let mut next = batches.recv().ok();
    while let Some(batch) = next {
        let mut start = 0;
        for &(line_end, record_end, listing) in &batch.items {
            log.write_all(&batch.bytes[line_end..record_end])?;
            to_child.write_all(&batch.bytes[start..line_end])?;
            if listing && sizes.listing_event > 0 {
                log.write_all(&event)?;
            }
            if listing && sizes.stderr > 0 {
                stderr.write_all(&said)?;
            }
            start = record_end;
        }
        next = match batches.try_recv() {
            Ok(b) => Some(b),
            Err(TryRecvError::Empty) => {
                to_child.flush()?;
                batches.recv().ok()
            }
            Err(TryRecvError::Disconnected) => None,
        };
        if hash.send(batch).is_err() {
            return Err(io::Error::other("hash thread gone"));
        }
    }
    to_child.flush()
}

/// Feeds every log line to the SHA-256 of the log's prefix.
fn hash_batches(batches: Receiver<Batch>, sizes: Sizes) -> [u8; 32] {
    let event = padded("{\"listing\":\"", sizes.listing_event);
    let mut digest = openssl::sha::Sha256::new();
    for batch in batches {
        for &(line_end, record_end, listing) in &batch.items {
            digest.update(&batch.bytes[line_end..record_end]);
            if listing && sizes.listing_event > 0 {
                digest.update(&event);
            }
        }
    }
    digest.finish()
}

fn main() -> io::Result<ExitCode> {
    let Some((log_path, cmd)) = relay::args("pipelined-spec-floor-relay") else {
        return Ok(ExitCode::from(2));
    };
    let mut log = OpenOptions::new()
        .create_new(true)
        .write(true)
        .open(&log_path)?;
    let (mut child, stdin, from_child) = relay::spawn(&cmd)?;
    let back = relay::copy_back(from_child);
    let (to_writer, batches) = sync_channel::<Batch>(2);
    let (to_hasher, hashed) = sync_channel::<Batch>(2);
    let sizes = Sizes::from_env();
    let hasher = std::thread::spawn(move || Ok(hash_batches(hashed, sizes)));
    let writer = std::thread::spawn(move || -> io::Result<()> {
        let mut to_child = BufWriter::with_capacity(64 * 1024, stdin);
        write_batches(batches, to_hasher, &mut log, &mut to_child, sizes)
    });

    let mut input = BufReader::with_capacity(64 * 1024, io::stdin().lock());
    let mut line = Vec::with_capacity(4096);
    let mut batch = Batch::default();
    let mut seq: u64 = 0;
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        add(&mut batch, &line, seq, sizes.record)?;
        seq += 1;
        if batch.bytes.len() >= BATCH_BYTES || input.buffer().is_empty() {
            let full = std::mem::take(&mut batch);
            if to_writer.send(full).is_err() {
                break;
            }
        }
    }
    if !batch.items.is_empty() {
        let _ = to_writer.send(batch);
    }
    drop(to_writer);
    let written = relay::join(writer, "writer");
    let digest = relay::join(hasher, "hasher");
    let relayed = relay::join(back, "relay thread");
    let status = child.wait()?;
    written?;
    relayed?;
    relay::write_digest(&log_path, digest?)?;
    Ok(relay::exit(status))
}
