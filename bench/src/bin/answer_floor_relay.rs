//! The hash floor of a proxy that records every answer (issue "results", SPEC §5.3): the hash
//! floor relay (`relay`: client lines forwarded with buffered writes flushed when the input runs
//! dry, one ~400-byte log line per client line with one write(2), the log's prefix SHA-256 with
//! OpenSSL's) that also writes one ~680-byte log line per *server* line — the size of an
//! `assay.mcp.result` event — to the same log, with one write(2) under the log's lock, hashed
//! into the same prefix digest. It is the least any logging stdio proxy can do when every
//! answer leaves an event in its one log, so its time over the hash floor's is the least a
//! second log line per call can cost.
//!
//! Usage: answer-floor-relay LOGFILE -- COMMAND [ARGS...]

#[path = "../relay/mod.rs"]
#[allow(dead_code)]
mod relay;

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

/// The log and the SHA-256 of its prefix, behind one lock (one log, one order).
struct Log {
    file: File,
    digest: openssl::sha::Sha256,
    seq: u64,
}

impl Log {
    /// Writes one line of `size` bytes (newline included) with one write(2), then hashes it.
    fn line(
        &mut self,
        record: &mut Vec<u8>,
        kind: &str,
        bytes: usize,
        size: usize,
    ) -> io::Result<()> {
        record.clear();
        write!(
            record,
            "{{\"seq\":{},\"type\":\"{kind}\",\"bytes\":{bytes},\"pad\":\"",
            self.seq
        )?;
        while record.len() < size - 3 {
            record.push(b'x');
        }
        record.extend_from_slice(b"\"}\n");
        self.file.write_all(record)?;
        self.digest.update(record);
        self.seq += 1;
        Ok(())
    }
}

fn main() -> io::Result<ExitCode> {
    let Some((log_path, cmd)) = relay::args("answer-floor-relay") else {
        return Ok(ExitCode::from(2));
    };
    let file = OpenOptions::new()
        .create_new(true)
        .write(true)
        .open(&log_path)?;
    let log = Arc::new(Mutex::new(Log {
        file,
        digest: openssl::sha::Sha256::new(),
        seq: 0,
    }));
    let (mut child, stdin, stdout) = relay::spawn(&cmd)?;
    let mut to_child = BufWriter::with_capacity(64 * 1024, stdin);
    let back_log = log.clone();
    let back = std::thread::spawn(move || -> io::Result<()> {
        let mut out = BufWriter::with_capacity(64 * 1024, io::stdout().lock());
        let mut record = Vec::with_capacity(1024);
        relay::forward_lines(stdout, &mut out, |line| {
            let mut l = back_log.lock().map_err(|_| io::Error::other("log lock"))?;
            l.line(&mut record, "answer", line.len(), 680)
        })
    });
    let mut record = Vec::with_capacity(512);
    relay::forward_lines(io::stdin().lock(), &mut to_child, |line| {
        let mut l = log.lock().map_err(|_| io::Error::other("log lock"))?;
        l.line(&mut record, "call", line.len(), 400)
    })?;
    drop(to_child);
    let relayed = relay::join(back, "relay thread");
    let status = child.wait()?;
    relayed?;
    let digest = Arc::try_unwrap(log)
        .ok()
        .and_then(|m| m.into_inner().ok())
        .map(|l| l.digest.finish());
    if let Some(d) = digest {
        relay::write_digest(&log_path, d)?;
    }
    Ok(relay::exit(status))
}
