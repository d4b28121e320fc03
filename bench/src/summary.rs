//! `assay capture summary ROOT` over a capture root of real captures (SPEC §10, §11 style):
//! 1,000 captures of 100 decisions each, written by 1,000 launches of
//! `assay mcp wrap --capture-root ROOT`, judged by one `capture summary` against
//! `assay capture read DIR` run once per directory — sequentially, and with one process per core
//! — interleaved round by round in rotating order.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use super::reader::{peak_rss, record_capture};
use super::{Env, Res, Row, call_line, median, row, verdict};

pub(crate) const DECISIONS: u64 = 100;
/// SPEC-side goal for 1,000 captures on the 2-core machine.
const GOAL_MS: f64 = 2_000.0;

/// Writes `n` captures of [`DECISIONS`] allowed calls each under a new root, one wrapper launch
/// per capture.
pub(crate) fn make_root(env: &Env, n: usize) -> Res<PathBuf> {
    let root = env.tmp.join("summary-root");
    let _ = fs::remove_dir_all(&root);
    let mut data = Vec::new();
    for i in 0..DECISIONS {
        call_line(&mut data, i);
    }
    for _ in 0..n {
        record_capture(env, "--capture-root", &root, data.clone())?;
    }
    Ok(root)
}

/// Wall time (ms) of `assay capture summary ROOT`; checks every capture is closed.
fn summary_once(env: &Env, root: &Path, n: usize) -> Res<f64> {
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
        return Err(format!(
            "capture summary: {} {}",
            out.status,
            text.lines().last().unwrap_or("")
        )
        .into());
    }
    Ok(ms)
}

/// Wall time (ms) of `assay capture read DIR` once per directory, `procs` processes at a time.
fn read_each_once(env: &Env, dirs: &[PathBuf], procs: usize) -> Res<f64> {
    let assay: &Path = &env.assay;
    let t0 = Instant::now();
    let failed = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        for k in 0..procs {
            let failed = &failed;
            s.spawn(move || {
                for d in dirs.iter().skip(k).step_by(procs) {
                    let ok = Command::new(assay)
                        .args(["capture", "read"])
                        .arg(d)
                        .stdin(Stdio::null())
                        .stdout(Stdio::null())
                        .status()
                        .map(|st| st.success())
                        .unwrap_or(false);
                    if !ok {
                        failed.store(true, std::sync::atomic::Ordering::Relaxed);
                    }
                }
            });
        }
    });
    if failed.load(std::sync::atomic::Ordering::Relaxed) {
        return Err("capture read: a capture did not read closed".into());
    }
    Ok(t0.elapsed().as_secs_f64() * 1e3)
}

pub(crate) fn bench_summary(env: &Env, rows: &mut Vec<Row>, rounds: usize, n: usize) -> Res<()> {
    let b = format!("capture summary ({n} captures × {DECISIONS} decisions)");
    let t0 = Instant::now();
    let root = make_root(env, n)?;
    eprintln!(
        "  summary: {n} captures written in {:.1} s",
        t0.elapsed().as_secs_f64()
    );
    let mut dirs: Vec<PathBuf> = fs::read_dir(&root)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    dirs.sort();
    if dirs.len() != n {
        return Err(format!("expected {n} run directories, found {}", dirs.len()).into());
    }
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    // Warm-up: page cache and binaries.
    summary_once(env, &root, n)?;
    read_each_once(env, &dirs, cores)?;

    let mut wall: [Vec<f64>; 3] = Default::default();
    let mut ratio_seq = Vec::new();
    let mut ratio_par = Vec::new();
    for round in 0..rounds {
        let mut t = [0.0; 3];
        for k in 0..3 {
            let cfg = (round + k) % 3;
            t[cfg] = match cfg {
                0 => summary_once(env, &root, n)?,
                1 => read_each_once(env, &dirs, 1)?,
                _ => read_each_once(env, &dirs, cores)?,
            };
        }
        eprintln!(
            "  summary round {round}: summary {:.0} ms, read per dir {:.0} ms, read per dir ×{cores} {:.0} ms",
            t[0], t[1], t[2]
        );
        for (w, v) in wall.iter_mut().zip(t) {
            w.push(v);
        }
        ratio_seq.push(t[1] / t[0]);
        ratio_par.push(t[2] / t[0]);
    }
    let rss = peak_rss(
        &env.assay,
        &["capture".as_ref(), "summary".as_ref(), root.as_os_str()],
    );
    let summary_ms = median(&mut wall[0]);
    let seq = median(&mut ratio_seq);
    let par = median(&mut ratio_par);
    rows.push(row(
        &b,
        "`assay capture summary ROOT`",
        format!("**{summary_ms:.0} ms**, peak RSS {rss:.1} MiB ({cores} worker threads)"),
        "1.00×".into(),
        "< 2 s; faster than `capture read` per directory",
        &verdict(
            summary_ms < GOAL_MS && seq > 1.0 && par > 1.0,
            format!("{:.0} ms", summary_ms - GOAL_MS),
        ),
    ));
    rows.push(row(
        &b,
        "`assay capture read DIR` once per directory, one after another",
        format!("{:.0} ms", median(&mut wall[1])),
        format!("summary **{seq:.1}×** faster"),
        "",
        "",
    ));
    rows.push(row(
        &b,
        &format!("`assay capture read DIR` once per directory, {cores} at a time"),
        format!("{:.0} ms", median(&mut wall[2])),
        format!("summary **{par:.1}×** faster"),
        "",
        "",
    ));
    let _ = fs::remove_dir_all(&root);
    Ok(())
}
