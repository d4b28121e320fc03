//! `assay policy replay POLICY ROOT` and `assay policy suggest ROOT` over a capture root
//! (issue 48 item 3): 10,000 captures of 100 decisions each, timed against `assay capture
//! summary ROOT` on the same root, interleaved round by round in rotating order, with the peak
//! RSS of each.
//!
//! One capture is written by a real `assay mcp wrap` session (100 allowed `echo` calls) and its
//! four files are copied into the other directories: writing 10,000 captures through 10,000
//! wrapper launches would take most of an hour on two cores, and the commands measured read each
//! directory on its own whatever the others hold. The replayed policy limits `echo` to 50 calls
//! per session, so every capture has 50 changed decisions to judge, count and print.

use std::fs;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Instant;

use super::reader::{copy_capture, peak_rss, record_capture};
use super::{Env, Res, Row, call_line, children_cpu_ms, median, row, verdict};

const DECISIONS: u64 = 100;
/// The target: replay and suggest within 2× the time of `capture summary` on the same root.
const GOAL_RATIO: f64 = 2.0;
/// The target: peak RSS under 64 MiB.
const GOAL_RSS_MIB: f64 = 64.0;

/// Writes one real capture and copies it into `n` directories under a new root.
fn make_root(env: &Env, n: usize) -> Res<PathBuf> {
    let root = env.tmp.join("replay-root");
    let _ = fs::remove_dir_all(&root);
    let one = env.tmp.join("replay-one");
    let _ = fs::remove_dir_all(&one);
    let mut data = Vec::new();
    for i in 0..DECISIONS {
        call_line(&mut data, i);
    }
    record_capture(env, "--capture-dir", &one, data)?;
    fs::create_dir_all(&root)?;
    for i in 0..n {
        copy_capture(&one, &root.join(format!("c{i:05}")))?;
    }
    Ok(root)
}

/// Wall and CPU time (ms) of `assay ARGS`, checking its exit status.
fn timed(env: &Env, args: &[&std::ffi::OsStr], want: i32) -> Res<(f64, f64)> {
    let cpu0 = children_cpu_ms();
    let t0 = Instant::now();
    let st = Command::new(&env.assay)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()?;
    let ms = t0.elapsed().as_secs_f64() * 1e3;
    if st.code() != Some(want) {
        return Err(format!("assay {args:?}: {st}, expected {want}").into());
    }
    Ok((ms, children_cpu_ms() - cpu0))
}

pub(crate) fn bench_replay(env: &Env, rows: &mut Vec<Row>, rounds: usize, n: usize) -> Res<()> {
    let b = format!("policy replay / suggest ({n} captures × {DECISIONS} decisions)");
    let t0 = Instant::now();
    let root = make_root(env, n)?;
    eprintln!(
        "  replay: {n} captures written in {:.1} s",
        t0.elapsed().as_secs_f64()
    );
    let policy = env.tmp.join("replay-policy.yaml");
    fs::write(
        &policy,
        "version: \"1\"\nallow: [\"*\"]\ndeny: [exec]\nlimits: { per_tool: { echo: 50 } }\n",
    )?;
    let same = env.tmp.join("replay-same.yaml");
    fs::write(&same, "version: \"1\"\nallow: [\"*\"]\ndeny: [exec]\n")?;
    let r: &std::ffi::OsStr = root.as_os_str();
    let p: &std::ffi::OsStr = policy.as_os_str();
    let summary: Vec<&std::ffi::OsStr> = vec!["capture".as_ref(), "summary".as_ref(), r];
    let replay: Vec<&std::ffi::OsStr> = vec![
        "policy".as_ref(),
        "replay".as_ref(),
        p,
        r,
        "--format".as_ref(),
        "json".as_ref(),
    ];
    let unchanged: Vec<&std::ffi::OsStr> = vec![
        "policy".as_ref(),
        "replay".as_ref(),
        same.as_os_str(),
        r,
        "--format".as_ref(),
        "json".as_ref(),
    ];
    let suggest: Vec<&std::ffi::OsStr> = vec!["policy".as_ref(), "suggest".as_ref(), r];
    let runs: [(&[&std::ffi::OsStr], i32); 4] =
        [(&summary, 0), (&replay, 1), (&unchanged, 0), (&suggest, 0)];
    // Warm-up: page cache and binaries.
    for (args, want) in runs {
        timed(env, args, want)?;
    }
    let mut wall: [Vec<f64>; 4] = Default::default();
    let mut cpu: [Vec<f64>; 4] = Default::default();
    let mut ratio: [Vec<f64>; 3] = Default::default();
    let mut cpu_ratio: [Vec<f64>; 3] = Default::default();
    for round in 0..rounds {
        let mut t = [(0.0, 0.0); 4];
        for k in 0..4 {
            let cfg = (round + k) % 4;
            let (args, want) = runs[cfg];
            t[cfg] = timed(env, args, want)?;
        }
        eprintln!(
            "  replay round {round} (wall/CPU ms): summary {:.0}/{:.0}, replay {:.0}/{:.0}, replay (no change) {:.0}/{:.0}, suggest {:.0}/{:.0}",
            t[0].0, t[0].1, t[1].0, t[1].1, t[2].0, t[2].1, t[3].0, t[3].1
        );
        for (i, (w, c)) in t.into_iter().enumerate() {
            wall[i].push(w);
            cpu[i].push(c);
        }
        for i in 0..3 {
            ratio[i].push(t[i + 1].0 / t[0].0);
            cpu_ratio[i].push(t[i + 1].1 / t[0].1);
        }
    }
    let rss: Vec<f64> = runs.iter().map(|(a, _)| peak_rss(&env.assay, a)).collect();
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    rows.push(row(
        &b,
        "`assay capture summary ROOT` (the yardstick)",
        format!(
            "{:.0} ms (CPU {:.0} ms), peak RSS {:.1} MiB ({cores} worker threads)",
            median(&mut wall[0]),
            median(&mut cpu[0]),
            rss[0]
        ),
        "1.00×".into(),
        "",
        "",
    ));
    for (i, (name, what)) in [
        (
            "replay",
            "`assay policy replay POLICY ROOT --format json` (50 changes per capture)",
        ),
        (
            "replay",
            "`assay policy replay POLICY ROOT --format json` (nothing changes)",
        ),
        ("suggest", "`assay policy suggest ROOT`"),
    ]
    .into_iter()
    .enumerate()
    {
        let ms = median(&mut wall[i + 1]);
        let cpu_ms = median(&mut cpu[i + 1]);
        let x = median(&mut ratio[i]);
        let xc = median(&mut cpu_ratio[i]);
        let mib = rss[i + 1];
        rows.push(row(
            &b,
            what,
            format!("**{ms:.0} ms** (CPU {cpu_ms:.0} ms), peak RSS **{mib:.1} MiB**"),
            format!("{name} **{x:.2}×** the summary's time (CPU **{xc:.2}×**)"),
            "≤ 2× `capture summary`; peak RSS < 64 MiB",
            &verdict(
                x <= GOAL_RATIO && mib < GOAL_RSS_MIB,
                format!("{x:.2}×, {mib:.1} MiB"),
            ),
        ));
    }
    let _ = fs::remove_dir_all(&root);
    Ok(())
}
