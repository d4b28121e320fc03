//! Latency (SPEC §11): the round trip of one call through the wrapper against the direct pipe and
//! the floor relay.

use super::*;

/// One request in flight at a time; returns per-round-trip latencies in µs (after warm-up).
pub(crate) fn latency_once(env: &Env, path: Path_, n: u64, warm: u64) -> Res<Vec<f64>> {
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

pub(crate) fn bench_latency(env: &Env, rows: &mut Vec<Row>, rounds: usize, n: u64) -> Res<()> {
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
