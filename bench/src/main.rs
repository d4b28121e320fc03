//! assay-bench: the SPEC §11 performance harness.
//!
//! Every figure is measured side by side with the direct pipe and the floor relay in the same run:
//! the configurations are interleaved round by round (rotating the order), each ratio is taken
//! within a round, and the table reports medians over rounds. That keeps the ratios meaningful on
//! a noisy, shared machine.
//!
//! Usage: assay-bench [--quick] [--only throughput,latency,startup,reader,summary,memory,policy]
//! Environment: ASSAY_BIN overrides the wrapper binary (default ../target/release/assay).

use std::fmt::Write as _;
use std::fs;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

mod policy;
mod summary;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

const POLICY: &str = "version: \"1\"\nname: bench\nallow: [\"echo\", \"bench_*\"]\n";
/// The same rules with `hide_refused_tools` (SPEC §5): every server line is also read for
/// answers to the client's `tools/list`.
const POLICY_HIDE: &str =
    "version: \"1\"\nname: bench\nallow: [\"echo\", \"bench_*\"]\nhide_refused_tools: true\n";
/// The same rules with pins (SPEC §5.1) written by `assay mcp pin` against the echo server.
const POLICY_PINS: &str =
    "version: \"1\"\nname: bench\nallow: [\"echo\", \"bench_*\"]\npins: pins.json\n";
const EVENT_SOURCE: &str = "assay://bench/local";

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Path_ {
    /// Client straight to the echo server.
    Direct,
    /// Through the SPEC §11 floor relay.
    Floor,
    /// Through the SPEC §11 hash floor: the floor relay also keeping OpenSSL's SHA-256 of its
    /// log's prefix.
    HashFloor,
    /// `assay mcp wrap --decision-log X --decision-log-new --event-source …`.
    Wrapped,
    /// `assay mcp wrap --capture-dir DIR --event-source …` (all evidence outputs).
    Capture,
    /// `assay mcp wrap --policy P` with no evidence output (startup row only).
    Bare,
    /// As `Wrapped`, with `hide_refused_tools: true` (throughput row only).
    Hiding,
    /// As `Wrapped`, with pins of the echo server's one tool (throughput row only).
    Pinned,
}

impl Path_ {
    fn label(self) -> &'static str {
        match self {
            Path_::Direct => "direct",
            Path_::Floor => "floor",
            Path_::HashFloor => "hash floor (floor + OpenSSL SHA-256 of the log)",
            Path_::Wrapped => "wrap + decision log",
            Path_::Capture => "wrap + capture dir",
            Path_::Bare => "wrap (no evidence)",
            Path_::Hiding => "wrap + decision log, hide_refused_tools",
            Path_::Pinned => "wrap + decision log, pins",
        }
    }
}

struct Env {
    assay: PathBuf,
    echo: PathBuf,
    relay: PathBuf,
    hash_relay: PathBuf,
    tmp: PathBuf,
    policy: PathBuf,
    policy_hide: PathBuf,
    policy_pins: PathBuf,
    counter: std::cell::Cell<u64>,
}

impl Env {
    fn fresh(&self, what: &str) -> PathBuf {
        let n = self.counter.get();
        self.counter.set(n + 1);
        self.tmp.join(format!("{what}-{n}"))
    }

    /// The command for one path, spawning `server` (argv).
    fn command(&self, path: Path_, server: &[&Path]) -> Command {
        let mut c;
        match path {
            Path_::Direct => {
                c = Command::new(server[0]);
                c.args(&server[1..]);
                return c;
            }
            Path_::Floor => {
                c = Command::new(&self.relay);
                c.arg(self.fresh("floor.log"));
            }
            Path_::HashFloor => {
                c = Command::new(&self.hash_relay);
                c.arg(self.fresh("hash-floor.log"));
            }
            Path_::Wrapped | Path_::Hiding | Path_::Pinned => {
                let policy = match path {
                    Path_::Hiding => &self.policy_hide,
                    Path_::Pinned => &self.policy_pins,
                    _ => &self.policy,
                };
                c = Command::new(&self.assay);
                c.args(["mcp", "wrap", "--policy"]).arg(policy);
                c.arg("--decision-log").arg(self.fresh("decisions.ndjson"));
                c.args(["--decision-log-new", "--event-source", EVENT_SOURCE]);
            }
            Path_::Capture => {
                c = Command::new(&self.assay);
                c.args(["mcp", "wrap", "--policy"]).arg(&self.policy);
                c.arg("--capture-dir").arg(self.fresh("capture"));
                c.args(["--event-source", EVENT_SOURCE]);
            }
            Path_::Bare => {
                c = Command::new(&self.assay);
                c.args(["mcp", "wrap", "--policy"]).arg(&self.policy);
            }
        }
        c.arg("--");
        c.args(server);
        c
    }

    fn clean(&self) {
        // Evidence files of finished runs are not needed; keep the disk footprint small.
        if let Ok(rd) = fs::read_dir(&self.tmp) {
            for e in rd.flatten() {
                let p = e.path();
                if p.file_name() == Some("fixed".as_ref()) {
                    continue;
                }
                let _ = if p.is_dir() {
                    fs::remove_dir_all(&p)
                } else {
                    fs::remove_file(&p)
                };
            }
        }
    }
}

/// One ~200-byte `tools/call` line with the given id.
fn call_line(out: &mut Vec<u8>, id: u64) {
    let start = out.len();
    let _ = write!(
        out,
        "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{\"name\":\"echo\",\"arguments\":{{\"n\":{id},\"text\":\""
    );
    while out.len() - start < 196 {
        out.push(b'a' + (out.len() % 26) as u8);
    }
    out.extend_from_slice(b"\"}}}\n");
}

/// `n` lines: one `tools/list` (a pinned session judges calls against the listing it saw, and
/// with hiding on it is the one answer rewritten), then `n - 1` calls.
fn lines(n: u64) -> Vec<u8> {
    let mut v = Vec::with_capacity(n as usize * 201);
    v.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"tools/list\"}\n");
    for i in 1..n {
        call_line(&mut v, i);
    }
    v
}

fn spawn(mut c: Command, stdin: Stdio) -> Res<Child> {
    Ok(c.stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()?)
}

/// CPU time (user + system, all threads) the process `pid` has used so far, in ms.
fn cpu_ms(pid: u32) -> Res<f64> {
    let s = fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // Fields after the parenthesized command name; utime and stime are fields 14 and 15.
    let rest = s.rsplit_once(") ").ok_or("bad stat")?.1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 =
        f.get(11).ok_or("stat")?.parse::<f64>()? + f.get(12).ok_or("stat")?.parse::<f64>()?;
    // USER_HZ is 100 on every Linux configuration we run on.
    Ok(ticks * 10.0)
}

/// Pipelined throughput: wall time from spawn to the last response and the child's exit, plus
/// the CPU time of the proxy process itself (sampled after the last response, before client EOF).
fn throughput_once(env: &Env, path: Path_, data: &[u8], n: u64) -> Res<(f64, f64)> {
    let echo = [env.echo.as_path()];
    let t0 = Instant::now();
    let mut child = spawn(env.command(path, &echo), Stdio::piped())?;
    let pid = child.id();
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    let mut stdout = child.stdout.take().ok_or("no stdout")?;
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let (got, cpu) = std::thread::scope(|s| -> Res<(u64, f64)> {
        let w = s.spawn(move || {
            let r = stdin.write_all(data);
            // Keep the input open until the CPU sample is taken.
            let _ = done_rx.recv();
            r
        });
        let mut buf = vec![0u8; 256 * 1024];
        let mut count = 0u64;
        let mut cpu = f64::NAN;
        loop {
            if count == n && cpu.is_nan() {
                cpu = cpu_ms(pid)?;
                let _ = done_tx.send(());
            }
            let k = stdout.read(&mut buf)?;
            if k == 0 {
                break;
            }
            count += memchr_count(&buf[..k]);
        }
        let _ = done_tx.send(());
        w.join().map_err(|_| "writer panicked")??;
        Ok((count, cpu))
    })?;
    let status = child.wait()?;
    let dt = t0.elapsed().as_secs_f64();
    if got != n || !status.success() {
        return Err(format!("{}: {got}/{n} responses, {status}", path.label()).into());
    }
    Ok((dt, cpu))
}

fn memchr_count(b: &[u8]) -> u64 {
    b.iter().filter(|c| **c == b'\n').count() as u64
}

/// One request in flight at a time; returns per-round-trip latencies in µs (after warm-up).
fn latency_once(env: &Env, path: Path_, n: u64, warm: u64) -> Res<Vec<f64>> {
    let echo = [env.echo.as_path()];
    let mut child = spawn(env.command(path, &echo), Stdio::piped())?;
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    let mut stdout = BufReader::new(child.stdout.take().ok_or("no stdout")?);
    let mut line = Vec::with_capacity(512);
    let mut resp = Vec::with_capacity(512);
    let mut out = Vec::with_capacity(n as usize);
    for i in 0..(warm + n) {
        line.clear();
        call_line(&mut line, i);
        resp.clear();
        let t = Instant::now();
        stdin.write_all(&line)?;
        stdout.read_until(b'\n', &mut resp)?;
        let dt = t.elapsed();
        if !resp.ends_with(b"\n") {
            return Err(format!("{}: no response to request {i}", path.label()).into());
        }
        if i >= warm {
            out.push(dt.as_secs_f64() * 1e6);
        }
    }
    drop(stdin);
    let status = child.wait()?;
    if !status.success() {
        return Err(format!("{}: {status}", path.label()).into());
    }
    Ok(out)
}

/// Spawn → exit of a server that exits at once (no client input), in ms.
fn startup_once(env: &Env, path: Path_) -> Res<f64> {
    let echo = [env.echo.as_path()];
    let mut c = env.command(path, &echo);
    c.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    let t0 = Instant::now();
    let status = c.status()?;
    let dt = t0.elapsed().as_secs_f64() * 1e3;
    if !status.success() {
        return Err(format!("{}: {status}", path.label()).into());
    }
    Ok(dt)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[i.min(v.len() - 1)]
}

struct Row {
    bench: String,
    path: String,
    value: String,
    ratio: String,
    target: String,
    verdict: String,
}

fn row(bench: &str, path: &str, value: String, ratio: String, target: &str, verdict: &str) -> Row {
    Row {
        bench: bench.into(),
        path: path.into(),
        value,
        ratio,
        target: target.into(),
        verdict: verdict.into(),
    }
}

fn verdict(ok: bool, by: String) -> String {
    if ok {
        "met".into()
    } else {
        format!("MISSED by {by}")
    }
}

fn bench_throughput(env: &Env, rows: &mut Vec<Row>, rounds: usize, n: u64) -> Res<()> {
    let data = lines(n);
    let paths = [
        Path_::Direct,
        Path_::Floor,
        Path_::HashFloor,
        Path_::Wrapped,
        Path_::Capture,
        Path_::Hiding,
        Path_::Pinned,
    ];
    const WRAPPED: usize = 3;
    const FLOOR: usize = 1;
    const HASH_FLOOR: usize = 2;
    // Warm-up (page cache, binaries).
    let tenth = lines(n / 10);
    for p in paths {
        throughput_once(env, p, &tenth, n / 10)?;
    }
    check_hash_floor(env, &tenth, n / 10)?;
    let k = paths.len();
    let mut t: Vec<Vec<f64>> = vec![Vec::new(); k];
    let mut cpu: Vec<Vec<f64>> = vec![Vec::new(); k];
    // Ratios within each round: wall against the floor and the hash floor, CPU against the floor.
    let mut r_floor: Vec<Vec<f64>> = vec![Vec::new(); k];
    let mut r_hash: Vec<Vec<f64>> = vec![Vec::new(); k];
    let mut r_cpu: Vec<Vec<f64>> = vec![Vec::new(); k];
    let mut r_wrapped: Vec<Vec<f64>> = vec![Vec::new(); k];
    for round in 0..rounds {
        let mut this = vec![0.0; k];
        let mut c = vec![0.0; k];
        for j in 0..k {
            let i = (j + round) % k;
            (this[i], c[i]) = throughput_once(env, paths[i], &data, n)?;
        }
        env.clean();
        for i in 0..k {
            t[i].push(this[i]);
            cpu[i].push(c[i]);
            r_floor[i].push(this[i] / this[FLOOR]);
            r_hash[i].push(this[i] / this[HASH_FLOOR]);
            r_cpu[i].push(c[i] / c[FLOOR]);
            r_wrapped[i].push(this[i] / this[WRAPPED]);
        }
        eprintln!(
            "  throughput round {round}: {} ms; proxy CPU {:?} ms",
            paths
                .iter()
                .zip(&this)
                .map(|(p, w)| format!("{} {:.1}", p.label(), w * 1e3))
                .collect::<Vec<_>>()
                .join(", "),
            c
        );
    }
    let b = format!("throughput ({n} lines)");
    for (i, p) in paths.iter().enumerate() {
        let ms = median(&mut t[i]) * 1e3;
        let lps = n as f64 / (ms / 1e3);
        let vs_floor = median(&mut r_floor[i]);
        let vs_hash = median(&mut r_hash[i]);
        let (target, v) = match p {
            Path_::Wrapped => (
                "≤ 1.50× hash floor",
                verdict(vs_hash <= 1.5, format!("{:.2}×", vs_hash - 1.5)),
            ),
            Path_::Capture => ("(reported)", String::new()),
            Path_::Hiding | Path_::Pinned => (
                "beside wrap + decision log (issues 22, 24: within noise)",
                format!("{:.2}× wrap + decision log", median(&mut r_wrapped[i])),
            ),
            _ => ("", String::new()),
        };
        let cpu_ms = median(&mut cpu[i]);
        let cpu_ratio = median(&mut r_cpu[i]);
        let ratio = match p {
            Path_::Floor => format!("1.00× floor; {vs_hash:.2}× hash floor"),
            Path_::HashFloor => format!("{vs_floor:.2}× floor; 1.00× hash floor"),
            Path_::Direct => format!("{vs_hash:.2}× hash floor; {vs_floor:.2}× floor"),
            _ => format!(
                "**{vs_hash:.2}× hash floor**; {vs_floor:.2}× floor; CPU {cpu_ratio:.2}× floor's"
            ),
        };
        rows.push(row(
            &b,
            p.label(),
            format!(
                "{ms:.1} ms ({:.0} k lines/s); CPU of the {} {cpu_ms:.0} ms",
                lps / 1e3,
                if *p == Path_::Direct {
                    "server"
                } else {
                    "proxy"
                }
            ),
            ratio,
            target,
            &v,
        ));
    }
    Ok(())
}

/// The hash floor's digest is the SHA-256 of its log (checked once, so the relay cannot skip
/// the work it is measured for).
fn check_hash_floor(env: &Env, data: &[u8], n: u64) -> Res<()> {
    let before = env.counter.get();
    throughput_once(env, Path_::HashFloor, data, n)?;
    let log = env.tmp.join(format!("hash-floor.log-{before}"));
    let got = fs::read_to_string(format!("{}.sha256", log.display()))?;
    let want: String = openssl::sha::sha256(&fs::read(&log)?)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    if got.trim() != want {
        return Err(format!("hash floor digest {got} differs from the log's {want}").into());
    }
    Ok(())
}

fn bench_latency(env: &Env, rows: &mut Vec<Row>, rounds: usize, n: u64) -> Res<()> {
    let paths = [
        Path_::Direct,
        Path_::Floor,
        Path_::HashFloor,
        Path_::Wrapped,
    ];
    let k = paths.len();
    let mut p50: Vec<Vec<f64>> = vec![Vec::new(); k];
    let mut p99: Vec<Vec<f64>> = vec![Vec::new(); k];
    let mut r50: Vec<Vec<f64>> = vec![Vec::new(); k];
    let mut r99: Vec<Vec<f64>> = vec![Vec::new(); k];
    for round in 0..rounds {
        let mut a = vec![0.0; k];
        let mut b = vec![0.0; k];
        for j in 0..k {
            let i = (j + round) % k;
            let mut l = latency_once(env, paths[i], n, 500)?;
            a[i] = pct(&mut l, 0.50);
            b[i] = pct(&mut l, 0.99);
        }
        env.clean();
        for i in 0..k {
            p50[i].push(a[i]);
            p99[i].push(b[i]);
            r50[i].push(a[i] / a[1]);
            r99[i].push(b[i] / b[1]);
        }
        eprintln!(
            "  latency round {round}: p50 direct {:.1} floor {:.1} hash floor {:.1} wrap {:.1} µs; p99 {:.1} / {:.1} / {:.1} / {:.1} µs",
            a[0], a[1], a[2], a[3], b[0], b[1], b[2], b[3]
        );
    }
    let bn = format!("latency ({n} round trips, 1 in flight)");
    for i in 0..k {
        let m50 = median(&mut r50[i]);
        let m99 = median(&mut r99[i]);
        let (target, v) = if paths[i] == Path_::Wrapped {
            let ok50 = m50 <= 1.25;
            let ok99 = m99 <= 1.5;
            let mut v = String::new();
            v += &if ok50 {
                "p50 met".to_string()
            } else {
                format!("p50 MISSED by {:.2}×", m50 - 1.25)
            };
            v += "; ";
            v += &if ok99 {
                "p99 met".to_string()
            } else {
                format!("p99 MISSED by {:.2}×", m99 - 1.5)
            };
            ("p50 ≤ 1.25×, p99 ≤ 1.50× floor", v)
        } else {
            ("", String::new())
        };
        rows.push(row(
            &bn,
            paths[i].label(),
            format!(
                "p50 {:.1} µs, p99 {:.1} µs",
                median(&mut p50[i]),
                median(&mut p99[i])
            ),
            format!("p50 {m50:.2}×, p99 {m99:.2}×"),
            target,
            &v,
        ));
    }
    Ok(())
}

fn bench_startup(env: &Env, rows: &mut Vec<Row>, rounds: usize) -> Res<()> {
    let paths = [Path_::Direct, Path_::Floor, Path_::Bare, Path_::Wrapped];
    for p in paths {
        startup_once(env, p)?;
    }
    let mut t: Vec<Vec<f64>> = vec![Vec::new(); paths.len()];
    let mut added: Vec<Vec<f64>> = vec![Vec::new(); paths.len()];
    // SPEC §11: the wrapper's start and shutdown against the floor relay's, within each round.
    let mut over_floor: Vec<Vec<f64>> = vec![Vec::new(); paths.len()];
    for round in 0..rounds {
        let mut this = [0.0; 4];
        for k in 0..paths.len() {
            let i = (k + round) % paths.len();
            this[i] = startup_once(env, paths[i])?;
        }
        for i in 0..paths.len() {
            t[i].push(this[i]);
            added[i].push(this[i] - this[0]);
            over_floor[i].push(this[i] - this[1]);
        }
        if round % 50 == 49 {
            env.clean();
        }
    }
    env.clean();
    let b = format!("startup+shutdown (server exits at once, {rounds} rounds)");
    for (i, p) in paths.iter().enumerate() {
        let add = median(&mut added[i]);
        let over = median(&mut over_floor[i]);
        let (target, v) = match p {
            Path_::Bare | Path_::Wrapped => (
                "≤ 1 ms over the floor",
                verdict(over <= 1.0, format!("{:.2} ms", over - 1.0)),
            ),
            _ => ("", String::new()),
        };
        let ratio = match p {
            Path_::Bare | Path_::Wrapped => format!("+{add:.2} ms (+{over:.2} ms over the floor)"),
            _ => format!("+{add:.2} ms"),
        };
        rows.push(row(
            &b,
            p.label(),
            format!("{:.2} ms", median(&mut t[i])),
            ratio,
            target,
            &v,
        ));
    }
    Ok(())
}

/// Runs one wrapped session of the echo server that writes its capture with `capture_flag`
/// (`--capture-dir` or `--capture-root`) at `path`, feeding `data` as the client and discarding
/// the responses; fails unless the wrapper exits 0.
fn record_capture(env: &Env, capture_flag: &str, path: &Path, data: Vec<u8>) -> Res<()> {
    let mut c = Command::new(&env.assay);
    c.args(["mcp", "wrap", "--policy"]).arg(&env.policy);
    c.arg(capture_flag).arg(path);
    c.args(["--event-source", EVENT_SOURCE, "--"])
        .arg(&env.echo);
    let mut child = spawn(c, Stdio::piped())?;
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    let mut stdout = child.stdout.take().ok_or("no stdout")?;
    let w = std::thread::spawn(move || stdin.write_all(&data));
    io::copy(&mut stdout, &mut io::sink())?;
    w.join().map_err(|_| "writer panicked")??;
    let status = child.wait()?;
    if !status.success() {
        return Err(format!("capture generation ({capture_flag}): {status}").into());
    }
    Ok(())
}

/// Generates a maximal capture: 10,000 decisions, the log close to the 8 MiB bound.
fn make_max_capture(env: &Env) -> Res<(PathBuf, u64)> {
    let dir = env.tmp.join("max-capture");
    let _ = fs::remove_dir_all(&dir);
    // A long allowed tool name and a long string id make each decision line ~815 bytes (7.8 MiB
    // of the 8 MiB bound; `tool_definition_sha256` is one of its fields).
    let tool = format!("bench_{}", "t".repeat(90));
    let mut data = Vec::new();
    for i in 0..10_000u64 {
        let id = format!("{i:0>8}-{}", "i".repeat(60));
        let _ = writeln!(
            data,
            "{{\"jsonrpc\":\"2.0\",\"id\":\"{id}\",\"method\":\"tools/call\",\"params\":{{\"name\":\"{tool}\",\"arguments\":{{\"n\":{i}}}}}}}"
        );
    }
    record_capture(env, "--capture-dir", &dir, data)?;
    let bytes = fs::metadata(dir.join("decisions.ndjson"))?.len();
    Ok((dir, bytes))
}

/// Wall time (ms), stdout and stderr of one run of `c`.
fn timed(mut c: Command) -> Res<(f64, std::process::Output)> {
    c.stdin(Stdio::null());
    let t0 = Instant::now();
    let out = c.output()?;
    Ok((t0.elapsed().as_secs_f64() * 1e3, out))
}

/// Peak RSS (MiB) of `program args…` by `/usr/bin/time -f %M`; NaN when unavailable.
fn peak_rss(program: &Path, args: &[&std::ffi::OsStr]) -> f64 {
    let time_bin = Path::new("/usr/bin/time");
    if !time_bin.exists() {
        return f64::NAN;
    }
    Command::new(time_bin)
        .args(["-f", "%M"])
        .arg(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .output()
        .ok()
        .and_then(|o| {
            String::from_utf8_lossy(&o.stderr)
                .lines()
                .last()
                .and_then(|l| l.trim().parse::<f64>().ok())
        })
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// Copies the capture files of `src` into a new directory `dst`.
fn copy_capture(src: &Path, dst: &Path) -> Res<()> {
    let _ = fs::remove_dir_all(dst);
    fs::create_dir_all(dst)?;
    for e in fs::read_dir(src)? {
        let e = e?;
        fs::copy(e.path(), dst.join(e.file_name()))?;
    }
    Ok(())
}

/// Hostile variants of the maximal capture (SPEC §11: over-bound files cost no more than the
/// bound), plus the in-bound worst case for the line parser.
fn make_hostile(env: &Env, max: &Path) -> Res<Vec<(String, PathBuf, bool)>> {
    let mut out = Vec::new();
    let log = "decisions.ndjson";
    // A 1 GiB sparse log: refused by fstat, never read.
    let d = env.tmp.join("hostile-sparse");
    copy_capture(max, &d)?;
    fs::OpenOptions::new()
        .write(true)
        .open(d.join(log))?
        .set_len(1 << 30)?;
    out.push(("decisions.ndjson 1 GiB sparse".to_string(), d, true));
    // A log of 8 MiB + 1 byte (real data, padded).
    let d = env.tmp.join("hostile-log-over");
    copy_capture(max, &d)?;
    let mut bytes = fs::read(d.join(log))?;
    bytes.resize(8 * 1024 * 1024 + 1, b' ');
    fs::write(d.join(log), &bytes)?;
    out.push(("decisions.ndjson 8 MiB + 1 byte".to_string(), d, true));
    // A companion of 64 KiB + 1 byte (the log itself maximal).
    let d = env.tmp.join("hostile-companion");
    copy_capture(max, &d)?;
    let mut ctx = fs::read(d.join("session-context.json"))?;
    ctx.resize(64 * 1024 + 1, b' ');
    fs::write(d.join("session-context.json"), &ctx)?;
    out.push(("session-context.json 64 KiB + 1 byte".to_string(), d, true));
    // In bound: 8 MiB of 12,000+ lines (too many decisions: counted, reasons dropped).
    let d = env.tmp.join("hostile-many-lines");
    copy_capture(max, &d)?;
    let line = b"{\"specversion\":\"1.0\"}\n";
    let mut many = Vec::new();
    while many.len() + line.len() <= 8 * 1024 * 1024 {
        many.extend_from_slice(line);
    }
    fs::write(d.join(log), &many)?;
    out.push((
        format!("8 MiB log of {} short lines", many.len() / line.len()),
        d,
        false,
    ));
    // In bound: the maximal log with one space before every line, so no line has the wrapper's
    // compact shape and every line takes the general path (strict scan + serde); the lines stay
    // valid, only the digest differs.
    let d = env.tmp.join("hostile-general-path");
    copy_capture(max, &d)?;
    let src = fs::read(d.join(log))?;
    let mut spaced = Vec::with_capacity(src.len() + 10_000);
    for l in src.split_inclusive(|&b| b == b'\n') {
        if spaced.len() + l.len() + 1 > 8 * 1024 * 1024 {
            break;
        }
        spaced.push(b' ');
        spaced.extend_from_slice(l);
    }
    fs::write(d.join(log), &spaced)?;
    out.push((
        format!(
            "{:.2} MiB log, every line indented (general path, not the one-pass parser)",
            spaced.len() as f64 / 1048576.0
        ),
        d,
        false,
    ));
    Ok(out)
}

fn bench_reader(env: &Env, rows: &mut Vec<Row>, rounds: usize) -> Res<()> {
    let b = "reader (maximal capture)";
    let has_reader = Command::new(&env.assay)
        .args(["capture", "read", "--help"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !has_reader {
        rows.push(row(
            b,
            "assay capture read",
            "not available in this build".into(),
            "".into(),
            "≤ 25 ms, RSS < 64 MiB",
            "not measured",
        ));
        return Ok(());
    }
    let (dir, bytes) = make_max_capture(env)?;
    let read = |d: &Path| {
        let mut c = Command::new(&env.assay);
        c.args(["capture", "read"]).arg(d);
        c
    };
    let probe = read(&dir).output()?;
    if !matches!(probe.status.code(), Some(0 | 1 | 3)) {
        rows.push(row(
            b,
            "assay capture read",
            format!(
                "not measurable: `assay capture read` exits with {} in this build",
                probe.status
            ),
            String::new(),
            "≤ 25 ms, RSS < 64 MiB",
            "not measured",
        ));
        return Ok(());
    }
    let python = std::env::var_os("PYTHON").unwrap_or_else(|| "python3".into());
    let pure = Path::new(env!("CARGO_MANIFEST_DIR")).join("pure_reader.py");
    let py_read = |d: &Path| {
        let mut c = Command::new(&python);
        c.arg(&pure).arg("--time").arg(d);
        c
    };
    let hostile = make_hostile(env, &dir)?;
    // Warm-up (page cache, binaries, Python's bytecode cache).
    for _ in 0..2 {
        read(&dir).output()?;
        py_read(&dir).output()?;
        for (_, d, _) in &hostile {
            read(d).output()?;
        }
    }

    // `openssl dgst -sha256` over the same log: SPEC §11 lets the reader take up to 1.5× that
    // where it is longer than 25 ms (CPUs without SHA extensions).
    let log = dir.join("decisions.ndjson");
    let dgst = || {
        let mut c = Command::new("openssl");
        c.args(["dgst", "-sha256"]).arg(&log);
        c
    };
    let want_digest = {
        let out = dgst().output()?;
        if !out.status.success() {
            return Err(format!("openssl dgst -sha256: {}", out.status).into());
        }
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };

    // Per round, in rotating order: `assay --version` (the process floor), the Rust reader,
    // the pure-Python reader, `openssl dgst -sha256` of the log, then each hostile capture.
    const FIRST_HOSTILE: usize = 4;
    let n_cfg = FIRST_HOSTILE + hostile.len();
    let mut wall: Vec<Vec<f64>> = vec![Vec::new(); n_cfg];
    let mut py_inproc = Vec::new();
    let mut ratio_cli = Vec::new();
    let mut ratio_inproc = Vec::new();
    let mut ratio_dgst = Vec::new();
    let mut hostile_ratio: Vec<Vec<f64>> = vec![Vec::new(); hostile.len()];
    let mut hostile_verdicts = vec![String::new(); hostile.len()];
    for round in 0..rounds {
        let mut this = vec![0.0; n_cfg];
        for k in 0..n_cfg {
            let i = (k + round) % n_cfg;
            match i {
                0 => {
                    let mut c = Command::new(&env.assay);
                    c.arg("--version");
                    this[0] = timed(c)?.0;
                }
                1 => {
                    let (t, out) = timed(read(&dir))?;
                    if out.status.code() != Some(0)
                        || !String::from_utf8_lossy(&out.stdout).contains("\"closed\"")
                    {
                        return Err(format!(
                            "capture read: {} {}",
                            out.status,
                            String::from_utf8_lossy(&out.stdout)
                        )
                        .into());
                    }
                    this[1] = t;
                }
                2 => {
                    let (t, out) = timed(py_read(&dir))?;
                    let stdout = String::from_utf8_lossy(&out.stdout);
                    if out.status.code() != Some(0) || !stdout.contains("\"closed\"") {
                        return Err(format!("pure_reader.py: {} {stdout}", out.status).into());
                    }
                    let inproc = String::from_utf8_lossy(&out.stderr)
                        .lines()
                        .find_map(|l| l.strip_prefix("inprocess_ms=")?.trim().parse::<f64>().ok())
                        .ok_or("pure_reader.py printed no inprocess_ms")?;
                    py_inproc.push(inproc);
                    this[2] = t;
                }
                3 => {
                    let (t, out) = timed(dgst())?;
                    if String::from_utf8_lossy(&out.stdout).trim() != want_digest {
                        return Err("openssl dgst printed another digest".into());
                    }
                    this[3] = t;
                }
                h => {
                    let (t, out) = timed(read(&hostile[h - FIRST_HOSTILE].1))?;
                    // The CLI pretty-prints; compare without whitespace.
                    let v: String = String::from_utf8_lossy(&out.stdout)
                        .chars()
                        .filter(|c| !c.is_whitespace())
                        .collect();
                    let closure = ["closed", "incomplete", "unknown"]
                        .into_iter()
                        .find(|c| v.contains(&format!("\"closure\":\"{c}\"")))
                        .unwrap_or("?");
                    let codes: Vec<&str> = v
                        .split("\"code\":\"")
                        .skip(1)
                        .filter_map(|s| s.split('"').next())
                        .collect();
                    let mut codes = codes;
                    codes.sort_unstable();
                    codes.dedup();
                    hostile_verdicts[h - FIRST_HOSTILE] =
                        format!("{closure} ({})", codes.join(", "));
                    this[h] = t;
                }
            }
        }
        for i in 0..n_cfg {
            wall[i].push(this[i]);
        }
        ratio_cli.push(this[2] / this[1]);
        if let Some(&pi) = py_inproc.last() {
            ratio_inproc.push(pi / (this[1] - this[0]).max(0.01));
        }
        ratio_dgst.push(this[1] / this[3]);
        for h in 0..hostile.len() {
            hostile_ratio[h].push(this[FIRST_HOSTILE + h] / this[1]);
        }
    }
    let rust_rss = peak_rss(
        &env.assay,
        &["capture".as_ref(), "read".as_ref(), dir.as_os_str()],
    );
    let py_rss = peak_rss(Path::new(&python), &[pure.as_os_str(), dir.as_os_str()]);
    let floor = median(&mut wall[0]);
    let w = median(&mut wall[1]);
    let pw = median(&mut wall[2]);
    let pin = median(&mut py_inproc);
    let rin = median(
        &mut wall[1]
            .iter()
            .zip(&wall[0])
            .map(|(a, b)| a - b)
            .collect::<Vec<_>>(),
    );
    let r_cli = median(&mut ratio_cli);
    let r_in = median(&mut ratio_inproc);
    let dw = median(&mut wall[3]);
    let r_dgst = median(&mut ratio_dgst);
    // SPEC §11: at most 25 ms, or 1.5× `openssl dgst -sha256` over the same log where that is
    // longer.
    let bound = 25.0_f64.max(1.5 * dw);
    let mut v = verdict(w <= bound, format!("{:.1} ms", w - bound));
    if rust_rss.is_nan() || rust_rss >= 64.0 {
        v += &format!("; RSS MISSED ({rust_rss:.1} MiB)");
    }
    let label = format!("10,000 decisions, {:.2} MiB log", bytes as f64 / 1048576.0);
    rows.push(row(
        b,
        &format!("assay capture read ({label})"),
        format!(
            "{w:.1} ms wall (process floor `assay --version` {floor:.1} ms; wall − floor {rin:.1} ms), peak RSS {rust_rss:.1} MiB"
        ),
        format!("{r_dgst:.2}× `openssl dgst -sha256`"),
        &format!("≤ max(25 ms, 1.5 × openssl dgst) = {bound:.1} ms, RSS < 64 MiB"),
        &v,
    ));
    rows.push(row(
        b,
        "`openssl dgst -sha256` of the same log",
        format!("{dw:.1} ms wall"),
        String::new(),
        "",
        "",
    ));
    rows.push(row(
        b,
        "reader, pure Python (same checks) — bench/pure_reader.py",
        format!(
            "{pw:.1} ms wall; {pin:.1} ms in-process (excl. interpreter start-up); peak RSS {py_rss:.1} MiB"
        ),
        format!("Python/Rust: wall {r_cli:.1}×; in-process vs Rust wall − floor {r_in:.1}×"),
        "Rust ≥ 7× faster",
        &verdict(r_cli >= 7.0, format!("{:.1}×", 7.0 - r_cli)),
    ));
    for (h, (name, d, over)) in hostile.iter().enumerate() {
        let hw = median(&mut wall[FIRST_HOSTILE + h]);
        let hr = median(&mut hostile_ratio[h]);
        let rss = peak_rss(
            &env.assay,
            &["capture".as_ref(), "read".as_ref(), d.as_os_str()],
        );
        rows.push(row(
            "reader (hostile capture)",
            &format!("assay capture read: {name}"),
            format!(
                "{hw:.1} ms wall, peak RSS {rss:.1} MiB → {}",
                hostile_verdicts[h]
            ),
            format!("{hr:.2}× maximal"),
            if *over {
                "over bound: ≤ maximal capture"
            } else {
                "in bound (reported)"
            },
            &if *over {
                verdict(hr <= 1.1, format!("{:.2}×", hr - 1.0))
            } else {
                String::new()
            },
        ));
    }
    Ok(())
}

fn vm_rss_kib(pid: u32) -> Res<u64> {
    let s = fs::read_to_string(format!("/proc/{pid}/status"))?;
    for l in s.lines() {
        if let Some(rest) = l.strip_prefix("VmRSS:") {
            let kb = rest.trim().trim_end_matches("kB").trim().parse::<u64>()?;
            return Ok(kb);
        }
    }
    Err("no VmRSS".into())
}

fn bench_memory(env: &Env, rows: &mut Vec<Row>, n: u64) -> Res<()> {
    let echo = [env.echo.as_path()];
    let mut child = spawn(env.command(Path_::Wrapped, &echo), Stdio::piped())?;
    let pid = child.id();
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    let mut stdout = child.stdout.take().ok_or("no stdout")?;
    let warm = 50_000u64.min(n / 2);
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let writer = std::thread::spawn(move || -> io::Result<()> {
        let mut chunk = Vec::with_capacity(1 << 20);
        let mut i = 0;
        while i < n {
            chunk.clear();
            while i < n && chunk.len() < (1 << 20) - 512 {
                call_line(&mut chunk, i);
                i += 1;
            }
            stdin.write_all(&chunk)?;
        }
        // Keep the session open until the final sample is taken.
        let _ = done_rx.recv();
        Ok(())
    });
    let mut buf = vec![0u8; 256 * 1024];
    let mut count = 0u64;
    let mut start = None;
    let mut end = None;
    while count < n {
        let k = stdout.read(&mut buf)?;
        if k == 0 {
            break;
        }
        count += memchr_count(&buf[..k]);
        if start.is_none() && count >= warm {
            start = Some(vm_rss_kib(pid)?);
        }
    }
    if count == n {
        std::thread::sleep(Duration::from_millis(50));
        end = Some(vm_rss_kib(pid)?);
    }
    let _ = done_tx.send(());
    writer.join().map_err(|_| "writer panicked")??;
    io::copy(&mut stdout, &mut io::sink())?;
    let status = child.wait()?;
    env.clean();
    let (Some(s), Some(e)) = (start, end) else {
        return Err(format!("memory run: {count}/{n} responses, {status}").into());
    };
    let growth = e as f64 - s as f64;
    rows.push(row(
        &format!("memory ({n} messages, wrap + decision log)"),
        "wrapper VmRSS",
        format!(
            "{:.1} MiB after {warm} → {:.1} MiB at end",
            s as f64 / 1024.0,
            e as f64 / 1024.0
        ),
        format!("{:+.0} KiB", growth),
        "growth < 1 MiB",
        &verdict(growth < 1024.0, format!("{:.0} KiB", growth - 1024.0)),
    ));
    Ok(())
}

fn machine() -> String {
    let cpu = fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let nproc = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(0);
    let load = fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let date = Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M UTC"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    let sha = if cpu_has_sha_extensions() {
        "yes"
    } else {
        "no"
    };
    // bench/run.sh sets this when it measures a CPU without SHA extensions on one that has them.
    let kind = match std::env::var("ASSAY_BENCH_KIND") {
        Ok(k) if !k.is_empty() => k,
        _ => format!("this CPU as it is (SHA extensions {sha})"),
    };
    format!(
        "machine: {nproc} CPUs (nproc), {cpu}, SHA extensions (cpuinfo `sha_ni`): {sha}; \
         measured as: {kind}; loadavg at start {}; {date}",
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    )
}

/// Whether the CPU has the SHA extensions (`sha_ni` in /proc/cpuinfo's flags).
fn cpu_has_sha_extensions() -> bool {
    fs::read_to_string("/proc/cpuinfo").is_ok_and(|s| {
        s.lines()
            .filter(|l| l.starts_with("flags"))
            .any(|l| l.split_whitespace().any(|f| f == "sha_ni"))
    })
}

fn main() {
    if let Err(e) = run() {
        eprintln!("assay-bench: {e}");
        std::process::exit(1);
    }
}

fn run() -> Res<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let quick = args.iter().any(|a| a == "--quick");
    let only: Option<Vec<String>> = args
        .iter()
        .position(|a| a == "--only")
        .and_then(|i| args.get(i + 1))
        .map(|s| s.split(',').map(str::to_string).collect());
    let want = |name: &str| only.as_ref().is_none_or(|o| o.iter().any(|x| x == name));

    let exe = std::env::current_exe()?;
    let dir = exe.parent().ok_or("no exe dir")?;
    let assay = std::env::var_os("ASSAY_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/release/assay"));
    if !assay.exists() {
        return Err(format!(
            "{} not found: run `cargo build --release` at the repository root",
            assay.display()
        )
        .into());
    }
    let tmp = std::env::temp_dir().join(format!("assay-bench-{}", std::process::id()));
    fs::create_dir_all(&tmp)?;
    // Policies and pins live in tmp/fixed, which `Env::clean` keeps.
    let fixed = tmp.join("fixed");
    fs::create_dir_all(&fixed)?;
    let policy = fixed.join("policy.yaml");
    fs::write(&policy, POLICY)?;
    let policy_hide = fixed.join("policy-hide.yaml");
    fs::write(&policy_hide, POLICY_HIDE)?;
    let policy_pins = fixed.join("policy-pins.yaml");
    fs::write(&policy_pins, POLICY_PINS)?;
    let echo = dir.join("echo-server");
    let pinned = Command::new(&assay)
        .args(["mcp", "pin", "--out"])
        .arg(fixed.join("pins.json"))
        .arg("--")
        .arg(&echo)
        .stdout(Stdio::null())
        .status()?;
    if !pinned.success() {
        return Err(format!("assay mcp pin against the echo server: {pinned}").into());
    }
    let env = Env {
        assay: fs::canonicalize(assay)?,
        echo,
        relay: dir.join("floor-relay"),
        hash_relay: dir.join("hash-floor-relay"),
        tmp,
        policy,
        policy_hide,
        policy_pins,
        counter: std::cell::Cell::new(0),
    };
    let head = machine();
    eprintln!("{head}\nwrapper: {}", env.assay.display());

    let (rounds, n_tp, n_lat, n_mem, n_start) = if quick {
        (3, 20_000, 2_000, 200_000, 40)
    } else {
        (7, 100_000, 10_000, 1_000_000, 200)
    };
    let mut rows = Vec::new();
    let result = (|| -> Res<()> {
        if want("throughput") {
            bench_throughput(&env, &mut rows, rounds, n_tp)?;
        }
        if want("latency") {
            bench_latency(&env, &mut rows, rounds, n_lat)?;
        }
        if want("startup") {
            bench_startup(&env, &mut rows, n_start)?;
        }
        if want("reader") {
            bench_reader(&env, &mut rows, 21)?;
        }
        if want("summary") {
            let (rounds, n) = if quick { (3, 200) } else { (5, 1_000) };
            summary::bench_summary(&env, &mut rows, rounds, n)?;
        }
        if want("memory") {
            bench_memory(&env, &mut rows, n_mem)?;
        }
        if want("policy") {
            policy::bench_policy(&env, &mut rows, if quick { 3 } else { rounds })?;
        }
        Ok(())
    })();
    let _ = fs::remove_dir_all(&env.tmp);
    result?;

    let mut out = String::new();
    let _ = writeln!(out, "{head}");
    let _ = writeln!(
        out,
        "medians over {rounds} interleaved rounds; ratios taken within each round, then the median\n"
    );
    let _ = writeln!(
        out,
        "| benchmark | path | median | ratios in the same run (startup: time added) | target | result |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|");
    for r in rows {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} |",
            r.bench, r.path, r.value, r.ratio, r.target, r.verdict
        );
    }
    print!("{out}");
    Ok(())
}
