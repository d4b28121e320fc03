//! Throughput (SPEC §11): lines per second through the wrapper against the direct pipe and the
//! floor relays, and the check that the hash floor really hashes its log.

use super::*;

/// Pipelined throughput: wall time from spawn to the last response and the child's exit, plus
/// the CPU time of the proxy process itself (sampled after the last response, before client EOF).
pub(crate) fn throughput_once(env: &Env, path: Path_, data: &[u8], n: u64) -> Res<(f64, f64)> {
    let echo = [env.echo.as_path()];
    pipelined(env.command(path, &echo), path.label(), data, n)
}

/// [`throughput_once`] for any command (`what` names it in errors): `data` written at once,
/// `n` response lines expected.
pub(crate) fn pipelined(command: Command, what: &str, data: &[u8], n: u64) -> Res<(f64, f64)> {
    windowed(command, what, data, n, None)
}

/// [`pipelined`], with at most `window` requests awaiting their response at any time when it is
/// given (as a client with that many requests in flight): the next line is written once the
/// responses have caught up.
pub(crate) fn windowed(
    command: Command,
    what: &str,
    data: &[u8],
    n: u64,
    window: Option<u64>,
) -> Res<(f64, f64)> {
    paced(
        command,
        what,
        data,
        n,
        window.map_or(Pace::AllAtOnce, Pace::AtMost),
    )
}

/// How the client writes its lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pace {
    /// Every line at once.
    AllAtOnce,
    /// At most this many requests awaiting their response.
    AtMost(u64),
    /// The first line, then, once it is answered, every other line at once: as a client that
    /// lists the tools before it calls them (with pins, a call judged before any listing of the
    /// session came back is refused, `P_TOOL_UNLISTED`).
    FirstAnswered,
}

/// [`pipelined`] at the given [`Pace`].
pub(crate) fn paced(
    command: Command,
    what: &str,
    data: &[u8],
    n: u64,
    pace: Pace,
) -> Res<(f64, f64)> {
    let t0 = Instant::now();
    let mut child = spawn(command, Stdio::piped())?;
    let pid = child.id();
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    let mut stdout = child.stdout.take().ok_or("no stdout")?;
    let (done_tx, done_rx) = mpsc::channel::<()>();
    // Responses read so far, for the windowed writer.
    let answered = (std::sync::Mutex::new(0u64), std::sync::Condvar::new());
    let (got, cpu) = std::thread::scope(|s| -> Res<(u64, f64)> {
        let answered = &answered;
        let w = s.spawn(move || -> io::Result<()> {
            let (lock, ready) = answered;
            match pace {
                Pace::AllAtOnce => stdin.write_all(data)?,
                Pace::FirstAnswered => {
                    let first = data
                        .iter()
                        .position(|b| *b == b'\n')
                        .map_or(data.len(), |i| i + 1);
                    stdin.write_all(&data[..first])?;
                    let mut read = lock.lock().unwrap_or_else(|e| e.into_inner());
                    while *read == 0 {
                        read = ready.wait(read).unwrap_or_else(|e| e.into_inner());
                    }
                    drop(read);
                    stdin.write_all(&data[first..])?;
                }
                Pace::AtMost(window) => {
                    for (i, line) in data.split_inclusive(|b| *b == b'\n').enumerate() {
                        let sent = i as u64;
                        let mut read = lock.lock().unwrap_or_else(|e| e.into_inner());
                        while sent >= *read + window {
                            read = ready.wait(read).unwrap_or_else(|e| e.into_inner());
                        }
                        drop(read);
                        stdin.write_all(line)?;
                    }
                }
            }
            // Keep the input open until the CPU sample is taken.
            let _ = done_rx.recv();
            Ok(())
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
            if pace != Pace::AllAtOnce {
                let (lock, ready) = answered;
                *lock.lock().unwrap_or_else(|e| e.into_inner()) = count;
                ready.notify_one();
            }
        }
        let _ = done_tx.send(());
        w.join().map_err(|_| "writer panicked")??;
        Ok((count, cpu))
    })?;
    let status = child.wait()?;
    let dt = t0.elapsed().as_secs_f64();
    if got != n || !status.success() {
        return Err(format!("{what}: {got}/{n} responses, {status}").into());
    }
    Ok((dt, cpu))
}

pub(crate) fn memchr_count(b: &[u8]) -> u64 {
    b.iter().filter(|c| **c == b'\n').count() as u64
}

pub(crate) fn bench_throughput(env: &Env, rows: &mut Vec<Row>, rounds: usize, n: u64) -> Res<()> {
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
pub(crate) fn check_hash_floor(env: &Env, data: &[u8], n: u64) -> Res<()> {
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
