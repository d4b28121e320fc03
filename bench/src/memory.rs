//! Memory (SPEC §11): the wrapper's resident set over a long session.

use super::*;

pub(crate) fn vm_rss_kib(pid: u32) -> Res<u64> {
    let s = fs::read_to_string(format!("/proc/{pid}/status"))?;
    for l in s.lines() {
        if let Some(rest) = l.strip_prefix("VmRSS:") {
            let kb = rest.trim().trim_end_matches("kB").trim().parse::<u64>()?;
            return Ok(kb);
        }
    }
    Err("no VmRSS".into())
}

pub(crate) fn bench_memory(env: &Env, rows: &mut Vec<Row>, n: u64) -> Res<()> {
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
        count += super::throughput::memchr_count(&buf[..k]);
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
