//! The relay shared by `floor-relay` and `hash-floor-relay` (SPEC §11 "the floor"): it spawns
//! the server, forwards client lines to it and its output back, byte for byte, with buffered
//! writes flushed when the input runs dry, and writes one ~400-byte log line per client line with
//! one write(2). The hash floor also feeds each log line, after its write, to a SHA-256 of the
//! log's prefix and writes the digest to `LOGFILE.sha256` at the end (as the wrapper writes
//! `decision_prefix_sha256` into its stop record).

use std::fs::OpenOptions;
use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitCode, Stdio};
use std::thread::JoinHandle;

/// What the relay does with each log line after writing it.
pub trait LogDigest {
    fn update(&mut self, line: &[u8]);
    /// The digest of every line fed, if this relay keeps one.
    fn finish(self) -> Option<[u8; 32]>;
}

/// OpenSSL's SHA-256 (libcrypto's `SHA256_Update`, the assembly OpenSSL picks for the CPU: SHA
/// extensions, else AVX2, AVX or SSSE3), as the hash floors keep the log's prefix digest.
pub struct OpensslSha256(pub openssl::sha::Sha256);

impl LogDigest for OpensslSha256 {
    fn update(&mut self, line: &[u8]) {
        self.0.update(line);
    }

    fn finish(self) -> Option<[u8; 32]> {
        Some(self.0.finish())
    }
}

/// What the relay does with each client line besides forwarding and logging it (nothing for the
/// floors), and how long its log line is.
pub trait LineWork {
    /// The log line's length, newline included.
    const RECORD: usize = 400;
    /// Work on the client line before its log line is written; its result is folded into the
    /// log line so it cannot be optimized away.
    fn work(&mut self, _line: &[u8]) -> u64 {
        0
    }
}

/// The floors: no work.
pub struct NoWork;

impl LineWork for NoWork {}

pub fn run<D: LogDigest>(name: &str, digest: D) -> io::Result<ExitCode> {
    run_with(name, digest, NoWork)
}

/// The relays' command line: `LOGFILE -- COMMAND [ARGS...]`; `None` (after the usage on stderr)
/// when it is not that.
pub fn args(name: &str) -> Option<(String, Vec<String>)> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().position(|a| a == "--") {
        Some(1) if args.len() > 2 => Some((args[0].clone(), args[2..].to_vec())),
        _ => {
            eprintln!("usage: {name} LOGFILE -- COMMAND [ARGS...]");
            None
        }
    }
}

/// Starts the server `cmd` with its stdin and stdout piped.
pub fn spawn(cmd: &[String]) -> io::Result<(Child, ChildStdin, ChildStdout)> {
    let program = cmd.first().ok_or_else(|| io::Error::other("no command"))?;
    let mut child = Command::new(program)
        .args(&cmd[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()?;
    let stdin = child
        .stdin
        .take()
        .ok_or_else(|| io::Error::other("stdin"))?;
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| io::Error::other("stdout"))?;
    Ok((child, stdin, stdout))
}

/// Copies the server's output to stdout on a thread of its own, flushed whenever a read drained
/// what was there.
pub fn copy_back(mut from_child: ChildStdout) -> JoinHandle<io::Result<()>> {
    std::thread::spawn(move || -> io::Result<()> {
        let mut out = BufWriter::with_capacity(64 * 1024, io::stdout().lock());
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = from_child.read(&mut buf)?;
            if n == 0 {
                return out.flush();
            }
            out.write_all(&buf[..n])?;
            out.flush()?; // the read drained what was there: flush before blocking again
        }
    })
}

/// Reads `input` line by line, writes each line to `out` (buffered, flushed whenever the input
/// ran dry, before blocking for more) and then hands it to `each`; at end of input `out` is
/// flushed.
pub fn forward_lines(
    input: impl Read,
    out: &mut impl Write,
    mut each: impl FnMut(&[u8]) -> io::Result<()>,
) -> io::Result<()> {
    let mut input = BufReader::with_capacity(64 * 1024, input);
    let mut line = Vec::with_capacity(4096);
    loop {
        if input.buffer().is_empty() {
            out.flush()?;
        }
        line.clear();
        if input.read_until(b'\n', &mut line)? == 0 {
            return out.flush();
        }
        out.write_all(&line)?;
        each(&line)?;
    }
}

/// Joins a relay thread, its panic an error.
pub fn join<T>(thread: JoinHandle<io::Result<T>>, what: &str) -> io::Result<T> {
    thread
        .join()
        .map_err(|_| io::Error::other(format!("{what} panicked")))?
}

/// Writes `LOGFILE.sha256`, the log's prefix digest in hex.
pub fn write_digest(log_path: &str, digest: [u8; 32]) -> io::Result<()> {
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    std::fs::write(format!("{log_path}.sha256"), hex + "\n")
}

/// The relay's exit status: the server's.
pub fn exit(status: std::process::ExitStatus) -> ExitCode {
    ExitCode::from(status.code().unwrap_or(1) as u8)
}

/// What the spec floors read of a call line: `params.arguments`, borrowed.
#[derive(serde::Deserialize)]
struct Message<'a> {
    #[serde(borrow)]
    params: Option<Params<'a>>,
}

#[derive(serde::Deserialize)]
struct Params<'a> {
    #[serde(borrow)]
    arguments: Option<&'a serde_json::value::RawValue>,
}

/// The spec floors' read of a call line: the SHA-256 of its `params.arguments` as written (not
/// canonicalized), `None` when the line is no JSON or has none.
pub fn arguments_sha256(line: &[u8]) -> Option<[u8; 32]> {
    let m = serde_json::from_slice::<Message<'_>>(line).ok()?;
    let args = m.params.and_then(|p| p.arguments)?;
    Some(openssl::sha::sha256(args.get().as_bytes()))
}

pub fn run_with<D: LogDigest, W: LineWork>(
    name: &str,
    mut digest: D,
    mut work: W,
) -> io::Result<ExitCode> {
    let Some((log_path, cmd)) = args(name) else {
        return Ok(ExitCode::from(2));
    };
    let mut log = OpenOptions::new()
        .create_new(true)
        .write(true)
        .open(&log_path)?;
    let (child, stdin, from_child) = spawn(&cmd)?;
    let mut child = child;
    let mut to_child = BufWriter::with_capacity(64 * 1024, stdin);
    let back = copy_back(from_child);

    let mut record = Vec::with_capacity(512);
    let mut seq: u64 = 0;
    forward_lines(io::stdin().lock(), &mut to_child, |line| {
        let worked = work.work(line);
        record.clear();
        write!(
            record,
            "{{\"seq\":{seq},\"bytes\":{},\"work\":{worked},\"decision\":\"allow\",\"pad\":\"",
            line.len()
        )?;
        while record.len() < W::RECORD - 3 {
            record.push(b'x');
        }
        record.extend_from_slice(b"\"}\n");
        // One write(2) per line (a regular file takes the whole buffer in one call).
        log.write_all(&record)?;
        digest.update(&record);
        seq += 1;
        Ok(())
    })?;
    drop(to_child);
    let relayed = join(back, "relay thread");
    let status = child.wait()?;
    relayed?;
    if let Some(d) = digest.finish() {
        write_digest(&log_path, d)?;
    }
    Ok(exit(status))
}
