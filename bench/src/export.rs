//! `assay capture export ROOT` against `assay capture summary ROOT` on the same root (issue 49
//! item 4: export of 10,000 captures within 2× the summary): 1,000 real captures of 100
//! decisions each, written by 1,000 launches of `assay mcp wrap --capture-root ROOT`, each
//! copied ten times under a second root (10,000 captures; the reader judges a copy as the
//! original), then per round (rotating order) the summary, the ndjson export and the otlp-json
//! export, each checked (exit 0, every capture closed / exported) with stdout to /dev/null: the
//! export's own cost, not a disk's. Ratios within each round; peak RSS of each export.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use super::reader::{copy_capture, peak_rss};
use super::summary::{DECISIONS, make_root};
use super::{Env, Res, Row, children_cpu_ms, median, row, verdict};

/// Copies of each real capture under the export root.
const COPIES: usize = 10;
/// The goal: an export within this factor of the summary's time (issue 49).
const GOAL_RATIO: f64 = 2.0;

/// `n` real captures, each copied [`COPIES`] times under a new root.
fn make_export_root(env: &Env, n: usize) -> Res<PathBuf> {
    let real = make_root(env, n)?;
    let root = env.tmp.join("export-root");
    let _ = fs::remove_dir_all(&root);
    fs::create_dir(&root)?;
    for e in fs::read_dir(&real)? {
        let e = e?;
        let name = e.file_name().to_string_lossy().into_owned();
        for k in 0..COPIES {
            copy_capture(&e.path(), &root.join(format!("{name}-{k}")))?;
        }
    }
    let _ = fs::remove_dir_all(&real);
    Ok(root)
}

/// Wall and CPU time (ms) of one command, stdout to /dev/null; its stderr must hold `want`.
fn once(env: &Env, args: &[&str], root: &Path, want: &str) -> Res<(f64, f64)> {
    let cpu0 = children_cpu_ms();
    let t0 = Instant::now();
    let out = Command::new(&env.assay)
        .args(args)
        .arg(root)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()?;
    let ms = t0.elapsed().as_secs_f64() * 1e3;
    let err = String::from_utf8_lossy(&out.stderr);
    if out.status.code() != Some(0) || !err.contains(want) {
        return Err(format!("{args:?}: {} {err}", out.status).into());
    }
    Ok((ms, children_cpu_ms() - cpu0))
}

/// Wall and CPU time (ms) of `capture summary ROOT`, checked to end with every capture closed.
fn summary_once(env: &Env, root: &Path, n: usize) -> Res<(f64, f64)> {
    let cpu0 = children_cpu_ms();
    let t0 = Instant::now();
    let out = Command::new(&env.assay)
        .args(["capture", "summary"])
        .arg(root)
        .stdin(Stdio::null())
        .output()?;
    let ms = t0.elapsed().as_secs_f64() * 1e3;
    let want = format!(
        "{{\"summary\":{{\"closed\":{n},\"incomplete\":0,\"unknown\":0,\"no_session\":0}}}}"
    );
    let text = String::from_utf8_lossy(&out.stdout);
    if out.status.code() != Some(0) || text.lines().last() != Some(want.as_str()) {
        return Err(format!("capture summary: {}", out.status).into());
    }
    Ok((ms, children_cpu_ms() - cpu0))
}

pub(crate) fn bench_export(env: &Env, rows: &mut Vec<Row>, rounds: usize, n: usize) -> Res<()> {
    let total = n * COPIES;
    let b = format!("capture export ({total} captures × {DECISIONS} decisions)");
    let t0 = Instant::now();
    let root = make_export_root(env, n)?;
    eprintln!(
        "  export: {total} captures written in {:.1} s",
        t0.elapsed().as_secs_f64()
    );
    let ndjson = ["capture", "export", "--format", "ndjson"];
    let otlp = ["capture", "export", "--format", "otlp-json"];
    let want_rows = format!(
        "exported {} rows from {total} of {total} captures",
        total * DECISIONS as usize
    );
    let want_spans = format!(
        "exported {} event spans from {total} of {total} captures",
        total * DECISIONS as usize
    );
    // Warm-up: page cache and binaries.
    summary_once(env, &root, total)?;
    once(env, &ndjson, &root, &want_rows)?;
    once(env, &otlp, &root, &want_spans)?;
    let mut wall: [Vec<f64>; 3] = Default::default();
    let mut cpu: [Vec<f64>; 3] = Default::default();
    let mut ratio_nd = Vec::new();
    let mut ratio_ot = Vec::new();
    let mut cpu_ratio_nd = Vec::new();
    let mut cpu_ratio_ot = Vec::new();
    for round in 0..rounds {
        let mut t = [(0.0, 0.0); 3];
        for k in 0..3 {
            let cfg = (round + k) % 3;
            t[cfg] = match cfg {
                0 => summary_once(env, &root, total)?,
                1 => once(env, &ndjson, &root, &want_rows)?,
                _ => once(env, &otlp, &root, &want_spans)?,
            };
        }
        eprintln!(
            "  export round {round} (wall/CPU ms): summary {:.0}/{:.0}, ndjson {:.0}/{:.0}, otlp-json {:.0}/{:.0}",
            t[0].0, t[0].1, t[1].0, t[1].1, t[2].0, t[2].1
        );
        for (i, (w, c)) in t.into_iter().enumerate() {
            wall[i].push(w);
            cpu[i].push(c);
        }
        ratio_nd.push(t[1].0 / t[0].0);
        ratio_ot.push(t[2].0 / t[0].0);
        cpu_ratio_nd.push(t[1].1 / t[0].1);
        cpu_ratio_ot.push(t[2].1 / t[0].1);
    }
    let rss = |args: &[&str]| {
        let mut a: Vec<&std::ffi::OsStr> = args.iter().map(|s| s.as_ref()).collect();
        a.push(root.as_os_str());
        peak_rss(&env.assay, &a)
    };
    let (rss_nd, rss_ot) = (rss(&ndjson), rss(&otlp));
    let summary_ms = median(&mut wall[0]);
    let summary_cpu = median(&mut cpu[0]);
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    rows.push(row(
        &b,
        "`assay capture summary ROOT` (the same root)",
        format!("{summary_ms:.0} ms (CPU {summary_cpu:.0} ms; {cores} worker threads)"),
        "1.00×".into(),
        "",
        "",
    ));
    let [_, nd, ot] = &mut wall;
    let [_, nd_cpu, ot_cpu] = &mut cpu;
    for (path, ms, cpu_ms, ratio, cpu_ratio, rss) in [
        (
            "`assay capture export --format ndjson ROOT`",
            median(nd),
            median(nd_cpu),
            median(&mut ratio_nd),
            median(&mut cpu_ratio_nd),
            rss_nd,
        ),
        (
            "`assay capture export --format otlp-json ROOT`",
            median(ot),
            median(ot_cpu),
            median(&mut ratio_ot),
            median(&mut cpu_ratio_ot),
            rss_ot,
        ),
    ] {
        rows.push(row(
            &b,
            path,
            format!("**{ms:.0} ms** (CPU {cpu_ms:.0} ms), peak RSS {rss:.1} MiB"),
            format!("{ratio:.2}× the summary (CPU {cpu_ratio:.2}×)"),
            "≤ 2× `capture summary`",
            &verdict(ratio <= GOAL_RATIO, format!("{:.2}×", ratio - GOAL_RATIO)),
        ));
    }
    let _ = fs::remove_dir_all(&root);
    Ok(())
}
