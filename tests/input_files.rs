//! Every file the product reads (SPEC §10): one opener that never blocks. A FIFO (no writer will
//! ever come) given as a policy, a pins file or a host configuration is refused at once with
//! "is not a regular file"; before, `File::open` waited forever for a writer.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::util::*;

/// How long a refusal may take before the run is killed and the test fails (it takes
/// milliseconds; the margin is for a loaded machine).
const PATIENCE: Duration = Duration::from_secs(20);

/// Runs `assay args` with stdin at end of file; kills it and fails when it has not ended within
/// [`PATIENCE`]. Returns the status and stderr.
fn run_bounded(args: &[String]) -> (Option<i32>, String) {
    let mut child = Command::new(bin())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn assay");
    let pid = i32::try_from(child.id()).unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        let status = child.wait().expect("wait");
        let _ = tx.send((status.code(), text));
    });
    match rx.recv_timeout(PATIENCE) {
        Ok(done) => {
            waiter.join().unwrap();
            done
        }
        Err(_) => {
            // Our child, not yet reaped: the waiter is still blocked on it.
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
            waiter.join().unwrap();
            panic!("assay {} hung on a FIFO", args.join(" "));
        }
    }
}

fn fifo(dir: &Path, name: &str) -> PathBuf {
    let p = dir.join(name);
    nix::unistd::mkfifo(&p, nix::sys::stat::Mode::S_IRWXU).unwrap();
    p
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

fn refused_promptly(args: &[String], status: i32) {
    let (code, stderr) = run_bounded(args);
    assert_eq!(code, Some(status), "{args:?}: {stderr}");
    assert!(
        stderr.contains("is not a regular file"),
        "{args:?}: {stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
}

#[test]
fn a_fifo_as_pins_file_is_refused_at_once() {
    let d = tempdir();
    let pins = fifo(d.path(), "pins.json");
    let policy = d.path().join("p.yaml");
    std::fs::write(
        &policy,
        format!("version: \"1\"\npins: {}\n", serde_json::json!(s(&pins))),
    )
    .unwrap();
    let marker = d.path().join("spawned");
    let server: Vec<String> = vec![
        "sh".into(),
        "-c".into(),
        format!("touch {}", marker.display()),
    ];
    // mcp wrap: a configuration error, nothing spawned.
    let mut wrap: Vec<String> = vec!["mcp".into(), "wrap".into(), "--policy".into(), s(&policy)];
    wrap.push("--".into());
    wrap.extend(server.iter().cloned());
    refused_promptly(&wrap, 2);
    // policy check: the same refusal.
    refused_promptly(&["policy".into(), "check".into(), s(&policy)], 2);
    // mcp pin --check FIFO: a usage error, before the server starts.
    let mut pin: Vec<String> = vec!["mcp".into(), "pin".into(), "--check".into(), s(&pins)];
    pin.push("--".into());
    pin.extend(server.iter().cloned());
    refused_promptly(&pin, 2);
    assert!(!marker.exists(), "the server was started");
}

#[test]
fn a_fifo_as_policy_or_host_configuration_is_refused_at_once() {
    let d = tempdir();
    let policy = fifo(d.path(), "p.yaml");
    refused_promptly(&["policy".into(), "check".into(), s(&policy)], 2);
    let config = fifo(d.path(), "claude_desktop_config.json");
    refused_promptly(
        &[
            "mcp".into(),
            "wrap-config".into(),
            s(&config),
            "--policy".into(),
            s(&demo_policy()),
        ],
        2,
    );
    // A symlink to a FIFO is no better.
    let link = d.path().join("link.json");
    std::os::unix::fs::symlink(&config, &link).unwrap();
    refused_promptly(
        &[
            "mcp".into(),
            "wrap-config".into(),
            s(&link),
            "--policy".into(),
            s(&demo_policy()),
        ],
        2,
    );
}

#[test]
fn a_fifo_as_hash_file_is_refused_at_once() {
    let d = tempdir();
    let cap = d.path().join("cap");
    run(
        &wrap_args(&strs(&capture_opts(&cap)), &["python3", &demo_server()]),
        &script(&[INIT]),
    )
    .expect_status(0);
    let extra = fifo(d.path(), "helper.py");
    let (code, stderr) = run_bounded(&[
        "capture".into(),
        "package".into(),
        s(&cap),
        s(&d.path().join("pkg")),
        "--hash-file".into(),
        s(&extra),
    ]);
    assert_ne!(code, Some(0), "{stderr}");
    assert!(stderr.contains("is not a regular file"), "{stderr}");
    assert!(!d.path().join("pkg").exists());
}
