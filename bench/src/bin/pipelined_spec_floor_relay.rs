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

use std::fs::OpenOptions;
use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};
use std::process::{Command, ExitCode, Stdio};
use std::sync::mpsc::{Receiver, SyncSender, TryRecvError, sync_channel};

use serde::Deserialize;
use serde_json::value::RawValue;

/// The log line's length, newline included (the wrapper's decision line for these calls).
const RECORD: usize = 705;
/// A batch is handed on once its arena holds this many bytes.
const BATCH_BYTES: usize = 128 * 1024;

#[derive(Deserialize)]
struct Message<'a> {
    #[serde(borrow)]
    params: Option<Params<'a>>,
}

#[derive(Deserialize)]
struct Params<'a> {
    #[serde(borrow)]
    arguments: Option<&'a RawValue>,
}

/// Client lines and their log lines, in order: `(line end, record end)` offsets into `bytes`.
#[derive(Default)]
struct Batch {
    bytes: Vec<u8>,
    items: Vec<(usize, usize)>,
}

/// Appends `line` and its log line to `batch`.
fn add(batch: &mut Batch, line: &[u8], seq: u64) -> io::Result<()> {
    let digest = serde_json::from_slice::<Message<'_>>(line)
        .ok()
        .and_then(|m| m.params.and_then(|p| p.arguments))
        .map(|a| openssl::sha::sha256(a.get().as_bytes()))
        .unwrap_or([0; 32]);
    let b = &mut batch.bytes;
    b.extend_from_slice(line);
    let line_end = b.len();
    write!(b, "{{\"seq\":{seq},\"bytes\":{},\"sha\":\"", line.len())?;
    for x in digest {
        write!(b, "{x:02x}")?;
    }
    b.extend_from_slice(b"\",\"pad\":\"");
    while b.len() - line_end < RECORD - 3 {
        b.push(b'x');
    }
    b.extend_from_slice(b"\"}\n");
    batch.items.push((line_end, b.len()));
    Ok(())
}

/// Writes each batch's log lines (one write(2) each) and forwards its client lines.
fn write_batches(
    batches: Receiver<Batch>,
    hash: SyncSender<Batch>,
    log: &mut std::fs::File,
    to_child: &mut impl Write,
) -> io::Result<()> {
    let mut next = batches.recv().ok();
    while let Some(batch) = next {
        let mut start = 0;
        for &(line_end, record_end) in &batch.items {
            log.write_all(&batch.bytes[line_end..record_end])?;
            to_child.write_all(&batch.bytes[start..line_end])?;
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
fn hash_batches(batches: Receiver<Batch>) -> [u8; 32] {
    let mut digest = openssl::sha::Sha256::new();
    for batch in batches {
        for &(line_end, record_end) in &batch.items {
            digest.update(&batch.bytes[line_end..record_end]);
        }
    }
    digest.finish()
}

fn main() -> io::Result<ExitCode> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (log_path, cmd) = match args.iter().position(|a| a == "--") {
        Some(1) if args.len() > 2 => (args[0].clone(), args[2..].to_vec()),
        _ => {
            eprintln!("usage: pipelined-spec-floor-relay LOGFILE -- COMMAND [ARGS...]");
            return Ok(ExitCode::from(2));
        }
    };
    let mut log = OpenOptions::new()
        .create_new(true)
        .write(true)
        .open(&log_path)?;
    let mut child = Command::new(&cmd[0])
        .args(&cmd[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()?;
    let stdin = child
        .stdin
        .take()
        .ok_or_else(|| io::Error::other("stdin"))?;
    let mut from_child = child
        .stdout
        .take()
        .ok_or_else(|| io::Error::other("stdout"))?;
    let back = std::thread::spawn(move || -> io::Result<()> {
        let mut out = BufWriter::with_capacity(64 * 1024, io::stdout().lock());
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = from_child.read(&mut buf)?;
            if n == 0 {
                return out.flush();
            }
            out.write_all(&buf[..n])?;
            out.flush()?;
        }
    });
    let (to_writer, batches) = sync_channel::<Batch>(2);
    let (to_hasher, hashed) = sync_channel::<Batch>(2);
    let hasher = std::thread::spawn(move || hash_batches(hashed));
    let writer = std::thread::spawn(move || -> io::Result<()> {
        let mut to_child = BufWriter::with_capacity(64 * 1024, stdin);
        write_batches(batches, to_hasher, &mut log, &mut to_child)
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
        add(&mut batch, &line, seq)?;
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
    let written = writer
        .join()
        .map_err(|_| io::Error::other("writer panicked"))?;
    let digest = hasher
        .join()
        .map_err(|_| io::Error::other("hasher panicked"))?;
    let relayed = back
        .join()
        .map_err(|_| io::Error::other("relay thread panicked"))?;
    let status = child.wait()?;
    written?;
    relayed?;
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    std::fs::write(format!("{log_path}.sha256"), hex + "\n")?;
    Ok(ExitCode::from(status.code().unwrap_or(1) as u8))
}
