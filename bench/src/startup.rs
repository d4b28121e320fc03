//! Start-up (SPEC §11): from spawn to the first answered line, wrapper against direct.

use super::*;

/// Spawn → exit of a server that exits at once (no client input), in ms.
pub(crate) fn startup_once(env: &Env, path: Path_) -> Res<f64> {
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

pub(crate) fn bench_startup(env: &Env, rows: &mut Vec<Row>, rounds: usize) -> Res<()> {
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
