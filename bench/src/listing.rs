//! Listing-heavy throughput (SPEC §5, §5.1, §11; issue 36: "throughput with hiding and pins
//! reported beside plain, within 10%"): the same pipelined session through `assay mcp wrap`
//! with a decision log, under the plain policy and under policies with `hide_refused_tools` and
//! `pins`, in the same rounds. Every tenth request is a `tools/list` and the echo server
//! (`--list-exec`) lists two tools, one of them (`exec`) refused by name: with hiding each of
//! those answers is read strictly and rewritten without `exec`, with pins each listed definition
//! is canonicalized and hashed and compared with its pin; the other nine requests are
//! `tools/call`s, judged against the remembered definition digest.
//!
//! `--listing-policy FILE[,FILE…]` adds a row per file (say, a policy with every SPEC §5.2
//! section): the same session under that policy, its ratio to the plain one taken the same way.
//! `--answer-bytes N` has the echo server answer each call with N bytes of text (SPEC §5.3: what
//! judging and recording answers costs per MiB).

use super::*;
use crate::throughput::{pipelined, windowed};

/// Requests in flight in the windowed workload.
const WINDOW: u64 = 16;

/// The plain rules, and the same with hiding, pins, or both (the pins file is written by
/// `assay mcp pin` against `echo-server --list-exec` at the start of the run).
pub(crate) const PLAIN: &str =
    "version: \"1\"\nname: bench-listing\nallow: [\"echo\", \"bench_*\"]\n";
pub(crate) const HIDE: &str = "hide_refused_tools: true\n";
pub(crate) const PINS: &str = "pins: pins-listing.json\n";
/// Every SPEC §5.2 section, with limits the session never reaches (their counters still run on
/// every call) and recorded, redacted arguments on every decision.
pub(crate) const EVERY_SECTION: &str = concat!(
    "resources: {allow: [\"file:///workspace/**\"], deny: [\"file:///workspace/.env\"]}\n",
    "prompts: {allow: [\"*\"], deny: [\"debug_*\"]}\n",
    "client_features: {sampling: deny, elicitation: allow, roots: allow}\n",
    "limits: {tool_calls: 100000000, per_tool: {echo: 100000000}, repeated_call: 100000000}\n",
    "record_arguments: true\n",
    "redact: [\"*token*\", \"*secret*\", \"*password*\", \"authorization\"]\n",
);

/// `n` lines, ids 0…n-1: a `tools/list` at every tenth id (0, 10, 20, …), `tools/call`s between.
pub(crate) fn listing_lines(n: u64) -> Vec<u8> {
    let mut v = Vec::with_capacity(n as usize * 201);
    for i in 0..n {
        if i % 10 == 0 {
            let _ = writeln!(
                v,
                "{{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":\"tools/list\"}}"
            );
        } else {
            call_line(&mut v, i);
        }
    }
    v
}

/// Writes `fixed/pins-listing.json` (what [`PINS`] names): both tools of `echo-server
/// --list-exec`, pinned by `assay mcp pin --out`.
pub(crate) fn pin_listing_server(env: &Env) -> Res<()> {
    let pinned = Command::new(&env.assay)
        .args(["mcp", "pin", "--out"])
        .arg(env.tmp.join("fixed").join("pins-listing.json"))
        .arg("--")
        .arg(&env.echo)
        .arg("--list-exec")
        .stdout(Stdio::null())
        .status()?;
    if !pinned.success() {
        return Err(format!("assay mcp pin against echo-server --list-exec: {pinned}").into());
    }
    Ok(())
}

/// One configuration of the group.
struct Config {
    label: String,
    via: Via,
    /// Runs the throughput row's lines (one `tools/list`, then calls) instead of the listing-heavy
    /// ones: the plain policy's cost of the listings themselves.
    calls_only: bool,
}

enum Via {
    /// A path of the other benchmarks (direct, hash floor), for scale.
    Other(Path_),
    /// The wrapper with a decision log and this policy.
    Policy(PathBuf),
}

pub(crate) fn bench_listing(
    env: &Env,
    rows: &mut Vec<Row>,
    rounds: usize,
    n: u64,
    extra: &[PathBuf],
    answer_bytes: Option<&str>,
) -> Res<()> {
    let fixed = env.tmp.join("fixed");
    pin_listing_server(env)?;
    let mut configs = vec![
        Config {
            label: Path_::Direct.label().into(),
            via: Via::Other(Path_::Direct),
            calls_only: false,
        },
        Config {
            label: Path_::HashFloor.label().into(),
            via: Via::Other(Path_::HashFloor),
            calls_only: false,
        },
    ];
    const PLAIN_AT: usize = 2;
    for (label, text) in [
        ("wrap + decision log, plain policy", PLAIN.to_string()),
        (
            "wrap + decision log, hide_refused_tools + pins",
            format!("{PLAIN}{HIDE}{PINS}"),
        ),
        (
            "wrap + decision log, hide_refused_tools",
            format!("{PLAIN}{HIDE}"),
        ),
        ("wrap + decision log, pins", format!("{PLAIN}{PINS}")),
        (
            "wrap + decision log, every §5.2 section + hiding + pins",
            format!("{PLAIN}{HIDE}{PINS}{EVERY_SECTION}"),
        ),
    ] {
        let file = fixed.join(format!("listing-{}.yaml", configs.len()));
        fs::write(&file, text)?;
        configs.push(Config {
            label: label.into(),
            via: Via::Policy(file),
            calls_only: false,
        });
    }
    for file in extra {
        configs.push(Config {
            label: format!("wrap + decision log, policy {}", file.display()),
            via: Via::Policy(fs::canonicalize(file)?),
            calls_only: false,
        });
    }
    configs.push(Config {
        label: "wrap + decision log, plain policy, the throughput row's lines (1 tools/list)"
            .into(),
        via: Via::Policy(fixed.join(format!("listing-{PLAIN_AT}.yaml"))),
        calls_only: true,
    });
    let mut server = vec![env.echo.as_path(), Path::new("--list-exec")];
    if let Some(n) = answer_bytes {
        server.extend([Path::new("--answer-bytes"), Path::new(n)]);
    }
    let command = |c: &Config| -> Res<Command> {
        let mut cmd = match &c.via {
            Via::Policy(policy) => {
                let mut wrap = Command::new(&env.assay);
                wrap.args(["mcp", "wrap", "--policy"]).arg(policy);
                wrap.arg("--decision-log")
                    .arg(env.fresh("decisions.ndjson"));
                wrap.args(["--decision-log-new", "--event-source", EVENT_SOURCE, "--"]);
                wrap.args(&server);
                wrap
            }
            Via::Other(path) => env.command(*path, &server),
        };
        // With hiding, every listing loses `exec` and the wrapper says so on stderr, one line
        // each (SPEC §4.1a): to a file, as a host keeps a server's stderr.
        cmd.stderr(fs::File::create(env.fresh("stderr.log"))?);
        Ok(cmd)
    };

    let data = listing_lines(n);
    let calls = lines(n);
    let tenth = listing_lines(n / 10);
    for c in &configs {
        pipelined(command(c)?, &c.label, &tenth, n / 10)?;
    }
    // All lines written at once, as the throughput row; and at most WINDOW in flight, as a client
    // that waits for answers (then the pending requests the wrapper tracks stay few).
    for window in [None, Some(WINDOW)] {
        let k = configs.len();
        let mut wall: Vec<Vec<f64>> = vec![Vec::new(); k];
        let mut cpu: Vec<Vec<f64>> = vec![Vec::new(); k];
        let mut r_wall: Vec<Vec<f64>> = vec![Vec::new(); k];
        let mut r_cpu: Vec<Vec<f64>> = vec![Vec::new(); k];
        for round in 0..rounds {
            let mut w = vec![0.0; k];
            let mut c = vec![0.0; k];
            for j in 0..k {
                let i = (j + round) % k;
                let lines = if configs[i].calls_only { &calls } else { &data };
                let cmd = command(&configs[i])?;
                (w[i], c[i]) = windowed(cmd, &configs[i].label, lines, n, window)?;
            }
            env.clean();
            for i in 0..k {
                wall[i].push(w[i]);
                cpu[i].push(c[i]);
                r_wall[i].push(w[i] / w[PLAIN_AT]);
                r_cpu[i].push(c[i] / c[PLAIN_AT]);
            }
            eprintln!(
                "  listing round {round} (window {window:?}): {} ms; proxy CPU {:?} ms",
                configs
                    .iter()
                    .zip(&w)
                    .map(|(p, w)| format!("{} {:.1}", p.label, w * 1e3))
                    .collect::<Vec<_>>()
                    .join(", "),
                c
            );
        }
        let b = match window {
            None => format!(
                "listing-heavy throughput ({n} lines at once, every 10th a tools/list of 2 tools)"
            ),
            Some(w) => format!(
                "listing-heavy throughput ({n} lines, at most {w} in flight, every 10th a tools/list of 2 tools)"
            ),
        };
        for (i, c) in configs.iter().enumerate() {
            let ms = median(&mut wall[i]) * 1e3;
            let vs_plain = median(&mut r_wall[i]);
            let cpu_ms = median(&mut cpu[i]);
            let cpu_vs_plain = median(&mut r_cpu[i]);
            let (ratio, target, v) = match (i, &c.via) {
                (_, Via::Other(_)) => (format!("{vs_plain:.2}× plain"), "", String::new()),
                _ if c.calls_only => (format!("{vs_plain:.2}× plain"), "", String::new()),
                (PLAIN_AT, _) => ("1.00× plain".into(), "", String::new()),
                _ => (
                    format!("**{vs_plain:.2}× plain**; CPU {cpu_vs_plain:.2}× plain's"),
                    "≤ 1.10× plain (issue 36)",
                    verdict(vs_plain <= 1.10, format!("{:.2}×", vs_plain - 1.10)),
                ),
            };
            rows.push(row(
                &b,
                &c.label,
                format!(
                    "{ms:.1} ms ({:.0} k lines/s); CPU of the {} {cpu_ms:.0} ms",
                    n as f64 / ms,
                    if matches!(c.via, Via::Other(Path_::Direct)) {
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
    }
    Ok(())
}
