//! The proxy's performance targets in one run (`--only targets`): every figure a ratio taken
//! inside a round against its reference, median over rounds.
//!
//! | target | session | reference |
//! |---|---|---|
//! | plain wrap throughput ≤ 1.20× | the throughput row's lines (one `tools/list`, then calls) to `echo-server` | the hash floor |
//! | every-section policy ≤ 1.20× | listing-heavy: every 10th line a `tools/list` of 2 tools (`echo-server --list-exec`) | the plain policy, same session |
//! | every-section policy ≤ 1.20× | call-heavy: one `tools/list`, then calls (`echo-server --list-exec`) | the plain policy, same session |
//! | p50 latency ≤ 1.10× | one call in flight, plain wrap + decision log | the floor relay |
//! | start-up ≤ +0.5 ms | server exits at once, wrap (no evidence) and wrap + decision log | the floor relay |
//!
//! "Every section" is the listing group's policy: `hide_refused_tools`, `pins`, `resources`,
//! `prompts`, `client_features`, `limits` (never reached, counted on every call),
//! `record_arguments` with `redact`.

use super::*;
use crate::latency::latency_once;
use crate::listing::{EVERY_SECTION, HIDE, PINS, PLAIN, listing_lines, pin_listing_server};
use crate::startup::startup_once;
use crate::throughput::{Pace, paced};

/// Wall ratio targets for the throughput sessions, p50 latency, and start-up over the floor.
const THROUGHPUT_TARGET: f64 = 1.20;
const P50_TARGET: f64 = 1.10;
const STARTUP_TARGET_MS: f64 = 0.5;

/// The plain rules with hiding, pins (`pins-listing.json`) and every SPEC §5.2 section.
pub(crate) fn every_section_policy() -> String {
    format!("{PLAIN}{HIDE}{PINS}{EVERY_SECTION}")
}

/// Builds the command of one run (a fresh decision log each time).
type Builder<'a> = Box<dyn Fn() -> Res<Command> + 'a>;

/// A pair of runs whose ratio is a target: `subject` over `reference`, both in the same round.
struct Pair {
    what: &'static str,
    subject: usize,
    reference: usize,
}

pub(crate) fn bench_targets(
    env: &Env,
    rows: &mut Vec<Row>,
    rounds: usize,
    n: u64,
    n_lat: u64,
    n_start: usize,
) -> Res<()> {
    throughput_targets(env, rows, rounds, n)?;
    latency_target(env, rows, rounds, n_lat)?;
    startup_target(env, rows, n_start)?;
    Ok(())
}

/// The three pipelined sessions, all six runs rotated through each round.
fn throughput_targets(env: &Env, rows: &mut Vec<Row>, rounds: usize, n: u64) -> Res<()> {
    pin_listing_server(env)?;
    let fixed = env.tmp.join("fixed");
    let plain = fixed.join("targets-plain.yaml");
    fs::write(&plain, PLAIN)?;
    let every = fixed.join("targets-every-section.yaml");
    fs::write(&every, every_section_policy())?;
    let echo = [env.echo.as_path()];
    let listing_server = [env.echo.as_path(), Path::new("--list-exec")];
    let wrap = |policy: &Path| -> Res<Command> {
        let mut c = Command::new(&env.assay);
        c.args(["mcp", "wrap", "--policy"]).arg(policy);
        c.arg("--decision-log").arg(env.fresh("decisions.ndjson"));
        c.args(["--decision-log-new", "--event-source", EVENT_SOURCE, "--"]);
        c.args(listing_server);
        // With hiding every listing loses `exec` and the wrapper says so on stderr (SPEC §4.1a):
        // to a file, as a host keeps a server's stderr.
        c.stderr(fs::File::create(env.fresh("stderr.log"))?);
        Ok(c)
    };
    let calls = lines(n);
    let listing = listing_lines(n);
    let runs: Vec<(&str, Builder<'_>, &[u8])> = vec![
        (
            "throughput: hash floor",
            Box::new(|| Ok(env.command(Path_::HashFloor, &echo))),
            &calls,
        ),
        (
            "throughput: wrap + decision log, plain policy",
            Box::new(|| Ok(env.command(Path_::Wrapped, &echo))),
            &calls,
        ),
        (
            "listing-heavy: plain policy",
            Box::new(|| wrap(&plain)),
            &listing,
        ),
        (
            "listing-heavy: every section",
            Box::new(|| wrap(&every)),
            &listing,
        ),
        (
            "call-heavy: plain policy",
            Box::new(|| wrap(&plain)),
            &calls,
        ),
        (
            "call-heavy: every section",
            Box::new(|| wrap(&every)),
            &calls,
        ),
    ];
    let pairs = [
        Pair {
            what: "plain wrap ÷ hash floor",
            subject: 1,
            reference: 0,
        },
        Pair {
            what: "listing-heavy: every section ÷ plain policy",
            subject: 3,
            reference: 2,
        },
        Pair {
            what: "call-heavy: every section ÷ plain policy",
            subject: 5,
            reference: 4,
        },
    ];
    // Warm-up: page cache, binaries.
    let tenth = lines(n / 10);
    for (label, command, _) in &runs {
        paced(command()?, label, &tenth, n / 10, Pace::FirstAnswered)?;
    }
    let k = runs.len();
    let mut wall: Vec<Vec<f64>> = vec![Vec::new(); k];
    let mut cpu: Vec<Vec<f64>> = vec![Vec::new(); k];
    let mut r_wall: Vec<Vec<f64>> = vec![Vec::new(); pairs.len()];
    let mut r_cpu: Vec<Vec<f64>> = vec![Vec::new(); pairs.len()];
    for round in 0..rounds {
        let mut w = vec![0.0; k];
        let mut c = vec![0.0; k];
        for j in 0..k {
            let i = (j + round) % k;
            let (label, command, data) = &runs[i];
            (w[i], c[i]) = paced(command()?, label, data, n, Pace::FirstAnswered)?;
        }
        env.clean();
        for i in 0..k {
            wall[i].push(w[i]);
            cpu[i].push(c[i]);
        }
        for (p, pair) in pairs.iter().enumerate() {
            r_wall[p].push(w[pair.subject] / w[pair.reference]);
            r_cpu[p].push(c[pair.subject] / c[pair.reference]);
        }
        eprintln!(
            "  targets round {round}: {}",
            runs.iter()
                .zip(w.iter().zip(&c))
                .map(|((l, _, _), (w, c))| format!("{l} {:.1} ms (CPU {c:.0} ms)", w * 1e3))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let b = format!("targets: pipelined sessions ({n} lines)");
    for (i, (label, _, _)) in runs.iter().enumerate() {
        let ms = median(&mut wall[i]) * 1e3;
        rows.push(row(
            &b,
            label,
            format!(
                "{ms:.1} ms ({:.0} k lines/s); CPU of the proxy {:.0} ms",
                n as f64 / ms,
                median(&mut cpu[i])
            ),
            String::new(),
            "",
            "",
        ));
    }
    for (p, pair) in pairs.iter().enumerate() {
        let ratio = median(&mut r_wall[p]);
        rows.push(row(
            &b,
            pair.what,
            String::new(),
            format!("**{ratio:.2}×** wall; CPU {:.2}×", median(&mut r_cpu[p])),
            &format!("≤ {THROUGHPUT_TARGET:.2}×"),
            &verdict(
                ratio <= THROUGHPUT_TARGET,
                format!("{:.2}×", ratio - THROUGHPUT_TARGET),
            ),
        ));
    }
    Ok(())
}

/// p50 (and p99, reported) of one call in flight: the plain wrap against the floor relay.
fn latency_target(env: &Env, rows: &mut Vec<Row>, rounds: usize, n: u64) -> Res<()> {
    let paths = [Path_::Floor, Path_::Wrapped];
    let mut p50: Vec<Vec<f64>> = vec![Vec::new(); paths.len()];
    let mut p99: Vec<Vec<f64>> = vec![Vec::new(); paths.len()];
    let mut r50 = Vec::new();
    let mut r99 = Vec::new();
    for round in 0..rounds {
        let mut a = [0.0; 2];
        let mut b = [0.0; 2];
        for j in 0..paths.len() {
            let i = (j + round) % paths.len();
            let mut l = latency_once(env, paths[i], n, 500)?;
            a[i] = pct(&mut l, 0.50);
            b[i] = pct(&mut l, 0.99);
        }
        env.clean();
        for i in 0..paths.len() {
            p50[i].push(a[i]);
            p99[i].push(b[i]);
        }
        r50.push(a[1] / a[0]);
        r99.push(b[1] / b[0]);
    }
    let b = format!("targets: latency ({n} round trips, 1 in flight)");
    for (i, p) in paths.iter().enumerate() {
        rows.push(row(
            &b,
            p.label(),
            format!(
                "p50 {:.1} µs, p99 {:.1} µs",
                median(&mut p50[i]),
                median(&mut p99[i])
            ),
            String::new(),
            "",
            "",
        ));
    }
    let m50 = median(&mut r50);
    rows.push(row(
        &b,
        "wrap + decision log ÷ floor",
        String::new(),
        format!("**p50 {m50:.2}×**; p99 {:.2}×", median(&mut r99)),
        &format!("p50 ≤ {P50_TARGET:.2}×"),
        &verdict(m50 <= P50_TARGET, format!("{:.2}×", m50 - P50_TARGET)),
    ));
    Ok(())
}

/// Start-up and shutdown with a server that exits at once, over the floor relay's.
fn startup_target(env: &Env, rows: &mut Vec<Row>, rounds: usize) -> Res<()> {
    let paths = [Path_::Floor, Path_::Bare, Path_::Wrapped];
    for p in paths {
        startup_once(env, p)?;
    }
    let mut t: Vec<Vec<f64>> = vec![Vec::new(); paths.len()];
    let mut over: Vec<Vec<f64>> = vec![Vec::new(); paths.len()];
    for round in 0..rounds {
        let mut this = [0.0; 3];
        for j in 0..paths.len() {
            let i = (j + round) % paths.len();
            this[i] = startup_once(env, paths[i])?;
        }
        for i in 0..paths.len() {
            t[i].push(this[i]);
            over[i].push(this[i] - this[0]);
        }
        if round % 50 == 49 {
            env.clean();
        }
    }
    env.clean();
    let b = format!("targets: start-up + shutdown (server exits at once, {rounds} rounds)");
    for (i, p) in paths.iter().enumerate() {
        let ms = median(&mut t[i]);
        if *p == Path_::Floor {
            rows.push(row(
                &b,
                p.label(),
                format!("{ms:.2} ms"),
                String::new(),
                "",
                "",
            ));
            continue;
        }
        let o = median(&mut over[i]);
        rows.push(row(
            &b,
            p.label(),
            format!("{ms:.2} ms"),
            format!("**+{o:.2} ms** over the floor"),
            &format!("≤ +{STARTUP_TARGET_MS:.1} ms"),
            &verdict(
                o <= STARTUP_TARGET_MS,
                format!("{:.2} ms", o - STARTUP_TARGET_MS),
            ),
        ));
    }
    Ok(())
}
