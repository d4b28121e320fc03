//! `assay mcp doctor`: one entry's run. Start it as planned, speak to it as a desktop host does
//! (the library's own client, [`assay::pins::PipeClient`]: `initialize` with the host's client
//! capabilities, `notifications/initialized`, `tools/list` following `nextCursor`, then
//! `prompts/list` and `resources/list` when the server offers them), close it as the SDKs do,
//! find and end what it left behind, and read the doctor's capture with the library's reader.

use std::fs::File;
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use assay::pins::{ClientCapabilities, PipeClient, ToolListing};

use super::doctor_close::{self, Closed, StderrTail};
use super::doctor_plan::Plan;
use super::doctor_procs;

/// What happened when the entry ran.
#[derive(Default)]
pub(crate) struct Ran {
    /// Why it could not be started (in words).
    pub spawn_error: Option<String>,
    /// It answered `initialize` with a revision assay knows.
    pub initialized: bool,
    pub listing: Option<ToolListing>,
    /// Why the tools could not be listed (in words; the server's text unrendered).
    pub list_error: Option<String>,
    /// `prompts/list` when the server offers prompts: how many, or why not.
    pub prompts: Option<Result<usize, String>>,
    /// `resources/list` when the server offers resources.
    pub resources: Option<Result<usize, String>>,
    pub closed: Option<Closed>,
    /// The last line the process wrote on stderr (unrendered).
    pub stderr_last: Option<String>,
    /// The processes carrying the marker after the close.
    pub left_behind: Vec<i32>,
    /// Those still alive after the doctor killed them.
    pub not_ended: Vec<i32>,
    /// The doctor's captures of a wrapped entry, in name order.
    pub captures: Vec<(PathBuf, assay::CaptureReport)>,
}

/// Runs `plan`, bounding its answers by `timeout`.
pub(crate) fn run(plan: &Plan, timeout: Duration) -> Ran {
    let mut ran = Ran::default();
    if let Err(e) = talk_and_close(plan, timeout, &mut ran) {
        ran.spawn_error = Some(e);
    }
    ran.left_behind = doctor_procs::marked(&plan.mark);
    if !ran.left_behind.is_empty() {
        ran.not_ended = doctor_procs::end(&ran.left_behind, &plan.mark);
    }
    if let Some(wrap) = &plan.wrap {
        ran.captures = captures(&wrap.capture_root);
    }
    ran
}

fn talk_and_close(plan: &Plan, timeout: Duration, ran: &mut Ran) -> Result<(), String> {
    let Some((program, args)) = plan.argv.split_first() else {
        return Err("the entry has no command".into());
    };
    if !plan.cwd.is_dir() {
        return Err(format!(
            "its working directory {} is not a directory",
            plan.cwd.display()
        ));
    }
    let mut child = Command::new(program)
        .args(args)
        .env_clear()
        .envs(plan.env.iter().map(|(k, v)| (k, v)))
        .current_dir(&plan.cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| spawn_error(program, &e))?;
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        let _ = child.kill();
        let _ = child.wait();
        return Err("its pipes could not be set up".into());
    };
    let tail = StderrTail::collect(stderr);
    let mut client = PipeClient::new(
        File::from(OwnedFd::from(stdin)),
        File::from(OwnedFd::from(stdout)),
        timeout,
        ClientCapabilities::Host,
    );
    match client.list_tools() {
        Ok(listing) => {
            ran.listing = Some(listing);
            let err = |e: assay::pins::ListError| e.to_string();
            if client.declares("prompts") {
                ran.prompts = Some(client.list_prompts().map(|p| p.len()).map_err(err));
            }
            if client.declares("resources") {
                ran.resources = Some(client.list_resources().map(|r| r.len()).map_err(err));
            }
        }
        Err(e) => ran.list_error = Some(e.to_string()),
    }
    ran.initialized = client.initialized();
    ran.closed = Some(doctor_close::close(&mut child, || client.close_input()));
    // A process left behind may hold the pipe: the wait is bounded.
    ran.stderr_last = tail.last_line(Duration::from_millis(500));
    Ok(())
}

fn spawn_error(program: &str, e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound if !program.contains('/') => {
            format!("its command {program:?} was not found on the PATH the host gives it")
        }
        std::io::ErrorKind::NotFound => format!("its command {program:?} does not exist"),
        std::io::ErrorKind::PermissionDenied => {
            format!("its command {program:?} is not executable")
        }
        _ => format!("its command {program:?} could not be started: {e}"),
    }
}

/// Every capture directory under `root`, read with the library's reader.
fn captures(root: &std::path::Path) -> Vec<(PathBuf, assay::CaptureReport)> {
    let Ok(dir) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = dir
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect();
    dirs.sort();
    dirs.into_iter()
        .map(|d| {
            let report = assay::show_capture(&d);
            (d, report)
        })
        .collect()
}
