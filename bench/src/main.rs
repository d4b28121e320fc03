//! assay-bench: the SPEC §11 performance harness.
//!
//! Every figure is measured side by side with the direct pipe and the floor relay in the same run:
//! the configurations are interleaved round by round (rotating the order), each ratio is taken
//! within a round, and the table reports medians over rounds. That keeps the ratios meaningful on
//! a noisy, shared machine.
//!
//! Usage: assay-bench [--quick]
//!   [--only throughput,listing,latency,startup,reader,summary,export,replay,memory,policy,targets]
//!   (`targets` is not in the default set: the proxy's performance targets in one run)
//!   [--listing-policy FILE[,FILE…]] (more rows for the listing group: the same session under
//!   each policy file, beside the plain one)
//!   [--answer-bytes N] (the listing group's echo server answers each `tools/call` with a text of
//!   N bytes instead of `ok`: what judging and recording answers costs per MiB, SPEC §5.3)
//!   [--in-place] (run the wrapper, the echo server and the floor relays where they are, not
//!   from fresh copies: see [`installed`])
//! Environment: ASSAY_BIN overrides the wrapper binary (default ../target/release/assay).

use std::fmt::Write as _;
use std::fs;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

mod export;
mod latency;
mod listing;
mod memory;
mod policy;
mod reader;
mod replay;
mod startup;
mod summary;
mod targets;
mod throughput;

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

/// The bench's calls' arguments repeat every this many ids (and the text's length follows the
/// id's digits, which keep the line at 201 bytes): under 100,000 ids a policy with
/// `limits.repeated_call` counts at most 20,000 distinct calls, well below its bound of 65,536,
/// past which a new distinct call is refused (`P_REPEATED_CALL`), which would change the session.
const DISTINCT_ARGUMENTS: u64 = 10_000;

/// One 201-byte `tools/call` line with the given id; its arguments are those of the id modulo
/// [`DISTINCT_ARGUMENTS`], their text as long as the id's digits leave room for.
fn call_line(out: &mut Vec<u8>, id: u64) {
    let start = out.len();
    let n = id % DISTINCT_ARGUMENTS;
    let _ = write!(
        out,
        "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{\"name\":\"echo\",\"arguments\":{{\"n\":{n},\"text\":\""
    );
    let text = out.len();
    let offset = n as usize;
    while out.len() - start < 196 {
        out.push(b'a' + ((out.len() - text + offset) % 26) as u8);
    }
    out.extend_from_slice(b"\"}}}\n");
}

/// One `tools/call` line as real clients write them: a `message` of text lines with a tab and
/// quotes (escapes in the JSON text), a fraction and a counter; its arguments repeat every
/// [`DISTINCT_ARGUMENTS`] ids, as [`call_line`]'s do.
fn realistic_call_line(out: &mut Vec<u8>, id: u64) {
    let n = id % DISTINCT_ARGUMENTS;
    let words: String = (0..60)
        .map(|i| char::from(b'a' + ((i + n as usize) % 26) as u8))
        .collect();
    let _ = writeln!(
        out,
        "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{\"name\":\"echo\",\"arguments\":{{\"message\":\"{} {n}\\n\\t\\\"{}\\\"\\n\",\"temperature\":0.7,\"n\":{n}}}}}}}",
        &words[..30],
        &words[30..]
    );
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

/// Spawns `c` with `stdin` and its stdout piped; stderr as the command says (inherited unless set).
fn spawn(mut c: Command, stdin: Stdio) -> Res<Child> {
    Ok(c.stdin(stdin).stdout(Stdio::piped()).spawn()?)
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

/// CPU time (user + system, ms) of this process's children waited for so far: `cutime` +
/// `cstime` of `/proc/self/stat`, in USER_HZ ticks (100 per second on Linux: 10 ms
/// resolution). A command's CPU is the difference around its run; on a loaded machine it
/// moves far less than its wall time. NaN when the file cannot be read.
fn children_cpu_ms() -> f64 {
    let Ok(stat) = fs::read_to_string("/proc/self/stat") else {
        return f64::NAN;
    };
    // Fields after the command name (which may hold spaces, hence the last ')'): state is
    // field 3, cutime 16, cstime 17.
    let Some((_, rest)) = stat.rsplit_once(')') else {
        return f64::NAN;
    };
    let f: Vec<&str> = rest.split_whitespace().collect();
    let tick = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok());
    match (tick(13), tick(14)) {
        (Some(u), Some(s)) => (u + s) * 10.0,
        _ => f64::NAN,
    }
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

/// `--emit calls|listing|realistic N`: the sessions' client lines on stdout, for
/// bench/profile.sh and bench/results/threads.py (`calls`: the throughput row's, one
/// `tools/list` then calls; `listing`: every tenth a `tools/list`; `realistic`: as `calls`,
/// with arguments as real clients write them, [`realistic_call_line`]). `--emit plain-policy|every-policy`: the targets group's policies (the second
/// names `pins-listing.json` beside it, written by `assay mcp pin` against `echo-server
/// --list-exec`).
fn emit(args: &[String]) -> Res<()> {
    let usage =
        "usage: assay-bench --emit calls|listing|realistic N | --emit plain-policy|every-policy";
    let count = || -> Res<u64> { Ok(args.get(1).ok_or(usage)?.parse()?) };
    let data = match args.first().map(String::as_str) {
        Some("calls") => lines(count()?),
        Some("listing") => listing::listing_lines(count()?),
        Some("realistic") => {
            let mut v = b"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"tools/list\"}\n".to_vec();
            for i in 1..count()? {
                realistic_call_line(&mut v, i);
            }
            v
        }
        Some("plain-policy") => listing::PLAIN.as_bytes().to_vec(),
        Some("every-policy") => targets::every_section_policy().into_bytes(),
        _ => return Err(usage.into()),
    };
    io::stdout().lock().write_all(&data)?;
    Ok(())
}

fn main() {
    if let Err(e) = run() {
        eprintln!("assay-bench: {e}");
        std::process::exit(1);
    }
}

/// Where the run takes `path` from: a copy of it in `dir` (written by `fs::copy`, as `cargo
/// install` and `pip` write what they install), unless `in_place`. How a binary's file sits in
/// the page cache changes how long it takes to start: on a KVM guest (AMD EPYC, 2026-12-07) the
/// same wrapper started 0.3–0.45 ms slower as rust-lld left it (every page cache page of the
/// file a single 4 KiB folio) or after an hour idle under the guest's DAMON `pageout` scheme
/// than as a fresh copy (large folios), against 0.02 ms for the 4.6 MB floor relay
/// (bench/README.md, "The binary's pages"). Fresh copies of every binary put the wrapper and
/// its floors on the same footing in every run.
fn installed(path: &Path, dir: &Path, in_place: bool) -> Res<PathBuf> {
    if in_place {
        return Ok(path.to_path_buf());
    }
    let name = path.file_name().ok_or("a binary without a file name")?;
    let copy = dir.join(name);
    fs::copy(path, &copy).map_err(|e| format!("copying {}: {e}", path.display()))?;
    Ok(copy)
}

fn run() -> Res<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--emit") {
        return emit(&args[1..]);
    }
    let quick = args.iter().any(|a| a == "--quick");
    let only: Option<Vec<String>> = args
        .iter()
        .position(|a| a == "--only")
        .and_then(|i| args.get(i + 1))
        .map(|s| s.split(',').map(str::to_string).collect());
    let want = |name: &str| only.as_ref().is_none_or(|o| o.iter().any(|x| x == name));
    let asked = |name: &str| only.as_ref().is_some_and(|o| o.iter().any(|x| x == name));
    let listing_policies: Vec<PathBuf> = args
        .iter()
        .position(|a| a == "--listing-policy")
        .and_then(|i| args.get(i + 1))
        .map(|s| s.split(',').map(PathBuf::from).collect())
        .unwrap_or_default();
    let answer_bytes: Option<String> = args
        .iter()
        .position(|a| a == "--answer-bytes")
        .and_then(|i| args.get(i + 1))
        .cloned();

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
    let in_place = args.iter().any(|a| a == "--in-place");
    let bin = |path: PathBuf| installed(&path, &fixed, in_place);
    let assay = bin(fs::canonicalize(assay)?)?;
    let echo = bin(dir.join("echo-server"))?;
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
        assay,
        echo,
        relay: bin(dir.join("floor-relay"))?,
        hash_relay: bin(dir.join("hash-floor-relay"))?,
        tmp,
        policy,
        policy_hide,
        policy_pins,
        counter: std::cell::Cell::new(0),
    };
    let head = machine();
    let copies = if in_place {
        "run where they are (--in-place)"
    } else {
        "fresh copies made by this run"
    };
    eprintln!(
        "{head}\nwrapper: {}\nbinaries (wrapper, echo server, floor relays): {copies}",
        env.assay.display()
    );

    let (rounds, n_tp, n_lat, n_mem, n_start) = if quick {
        (3, 20_000, 2_000, 200_000, 40)
    } else {
        (7, 100_000, 10_000, 1_000_000, 200)
    };
    let mut rows = Vec::new();
    let result = (|| -> Res<()> {
        if want("throughput") {
            throughput::bench_throughput(&env, &mut rows, rounds, n_tp)?;
        }
        if want("listing") {
            listing::bench_listing(
                &env,
                &mut rows,
                rounds,
                n_tp,
                &listing_policies,
                answer_bytes.as_deref(),
            )?;
        }
        if want("latency") {
            latency::bench_latency(&env, &mut rows, rounds, n_lat)?;
        }
        if want("startup") {
            startup::bench_startup(&env, &mut rows, n_start)?;
        }
        if want("reader") {
            reader::bench_reader(&env, &mut rows, 21)?;
        }
        if want("summary") {
            let (rounds, n) = if quick { (3, 200) } else { (5, 1_000) };
            summary::bench_summary(&env, &mut rows, rounds, n)?;
        }
        if want("export") {
            let (rounds, n) = if quick { (3, 100) } else { (5, 1_000) };
            export::bench_export(&env, &mut rows, rounds, n)?;
        }
        if want("replay") {
            let (rounds, n) = if quick { (3, 1_000) } else { (5, 10_000) };
            replay::bench_replay(&env, &mut rows, rounds, n)?;
        }
        if want("memory") {
            memory::bench_memory(&env, &mut rows, n_mem)?;
        }
        if asked("targets") {
            targets::bench_targets(&env, &mut rows, rounds, n_tp, n_lat, n_start)?;
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
