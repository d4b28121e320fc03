//! `assay mcp doctor (FILE | --host H) [--server NAME]…` (issue 45): starts every stdio entry of
//! a host configuration as its host would ([`super::doctor_plan`]), speaks to it as a desktop
//! host does and closes it as the MCP SDKs do ([`super::doctor_run`]), then prints one row per
//! entry ([`super::doctor_report`]). The configuration is only read, never written. A wrapped
//! entry's session lands in a capture root of the doctor's own (a new temporary directory,
//! removed at the end unless `--keep-captures DIR`), never in the entry's.
//!
//! Exit status: 0 every wrapped entry is healthy, 1 one is not, 2 usage error (an unreadable
//! file, an unknown `--server`, a bad option), 3 nothing to check (no stdio entry).

use std::io::Write;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use assay::host_config::{EntryReport, Launch, entry_label, launch_entries};
use assay::text;

use super::args::{DoctorArgs, DoctorFormat};
use super::doctor_plan::{plan, segment};
use super::doctor_report::{self, Finding, HEADER};
use super::doctor_run;
use super::exit;
use super::messages::Failure;
use super::text::Table;

pub(crate) fn run(args: DoctorArgs) -> Result<ExitCode, Failure> {
    if !(args.timeout.is_finite() && args.timeout > 0.0) {
        return Err(Failure::Invalid(
            "--timeout must be a positive number of seconds".into(),
        ));
    }
    let timeout = Duration::from_secs_f64(args.timeout);
    if let Some(keep) = &args.keep_captures {
        if std::fs::symlink_metadata(keep).is_ok() {
            return Err(Failure::Invalid(format!(
                "{} exists; --keep-captures needs a new directory",
                keep.display()
            )));
        }
    }
    let mut out = std::io::stdout().lock();
    let file = match (&args.file, args.host) {
        (Some(file), _) => file.clone(),
        (None, Some(host)) => {
            let path = host.config_path().map_err(Failure::library)?;
            if args.format == DoctorFormat::Text {
                writeln!(out, "{host}: {}", text::render(&path.display().to_string()))
                    .and_then(|()| out.flush())
                    .map_err(Failure::output(exit::OK))?;
            }
            if !path.exists() {
                return Err(Failure::Invalid(format!(
                    "{} does not exist (no {host} configuration here); give the file's path \
                     instead of --host, or run `assay mcp hosts`",
                    path.display()
                )));
            }
            path
        }
        (None, None) => return Err(Failure::Invalid("give FILE or --host HOST".into())),
    };
    let (real, entries) = launch_entries(&file).map_err(Failure::library)?;
    let selected = select(entries, &args.server)?;
    let config = real.display().to_string();
    let skipped = selected.iter().filter(|(_, l)| l.is_none()).count();
    let to_check: Vec<(EntryReport, Launch)> = selected
        .into_iter()
        .filter_map(|(r, l)| Some((r, l?)))
        .collect();
    if to_check.is_empty() {
        return Err(Failure::message(
            format!("nothing to check: {config} has no stdio server entry to start"),
            exit::FAILURE,
        ));
    }
    let root = DoctorRoot::create(args.keep_captures.as_deref())?;
    let base = marker_base();
    let mut findings = Vec::new();
    for (i, (report, launch)) in to_check.iter().enumerate() {
        let capture_root = root
            .path
            .join(format!("{:02}-{}", i + 1, segment(&report.name)));
        let planned = plan(report, launch, &capture_root, &format!("{base}-{i}"));
        let ran = doctor_run::run(&planned, timeout);
        findings.push(doctor_report::finding(&planned, &ran));
    }
    let kept = root.finish();
    let printed = match args.format {
        DoctorFormat::Json => findings
            .iter()
            .map(|f| doctor_report::json(f, &config, kept.as_deref()).to_string())
            .collect::<Vec<_>>(),
        DoctorFormat::Text => text_lines(&findings, skipped, kept.as_deref()),
    };
    writeln!(out, "{}", printed.join("\n"))
        .and_then(|()| out.flush())
        .map_err(Failure::output(exit::INCOMPLETE))?;
    let healthy = findings.iter().all(|f| !f.wrapped || f.reasons.is_empty());
    Ok(exit::code(if healthy {
        exit::OK
    } else {
        exit::INCOMPLETE
    }))
}

/// The entries `--server` names (a name, or a label as printed); every entry when none.
fn select(
    entries: Vec<(EntryReport, Option<Launch>)>,
    names: &[String],
) -> Result<Vec<(EntryReport, Option<Launch>)>, Failure> {
    let named = |r: &EntryReport, n: &String| r.name == *n || entry_label(r) == *n;
    let unknown: Vec<&String> = names
        .iter()
        .filter(|n| !entries.iter().any(|(r, _)| named(r, n)))
        .collect();
    if !unknown.is_empty() {
        let known: Vec<String> = entries.iter().map(|(r, _)| entry_label(r)).collect();
        return Err(Failure::Invalid(format!(
            "no entry named {} (the entries: {})",
            unknown
                .iter()
                .map(|n| format!("{n:?}"))
                .collect::<Vec<_>>()
                .join(", "),
            known.join(", ")
        )));
    }
    Ok(entries
        .into_iter()
        .filter(|(r, _)| names.is_empty() || names.iter().any(|n| named(r, n)))
        .collect())
}

fn text_lines(findings: &[Finding], skipped: usize, kept: Option<&str>) -> Vec<String> {
    let mut table = Table::new(&HEADER);
    for f in findings {
        table.row(doctor_report::row(f));
    }
    let mut lines = table.lines("");
    for f in findings {
        let label = text::render(&f.label);
        for r in &f.reasons {
            lines.push(format!("{label}: {}", text::render(r)));
        }
        if let Some(doctor_report::PinsState::Drifted { check, .. }) = &f.pins {
            lines.extend(
                super::pin::check_lines(check)
                    .into_iter()
                    .map(|l| format!("  {l}")),
            );
        }
        if !f.wrapped {
            lines.push(format!(
                "{label}: not protected: it runs without assay (`assay mcp wrap-config --server` wraps it)"
            ));
        }
        for n in &f.notes {
            lines.push(format!("{label}: note: {}", text::render(n)));
        }
    }
    let wrapped = findings.iter().filter(|f| f.wrapped).count();
    let healthy = findings
        .iter()
        .filter(|f| f.wrapped && f.reasons.is_empty())
        .count();
    let mut summary = format!(
        "{healthy} of {wrapped} wrapped entr{} healthy; {} not protected",
        if wrapped == 1 { "y" } else { "ies" },
        findings.len() - wrapped
    );
    if skipped > 0 {
        summary.push_str(&format!(
            "; {skipped} remote or without command, not started"
        ));
    }
    lines.push(summary);
    if let Some(dir) = kept {
        lines.push(format!(
            "the doctor's captures are in {}",
            text::render(dir)
        ));
    }
    lines
}

/// A random hex value for the markers of this run (not a secret: it only has to differ from
/// every other run's).
fn marker_base() -> String {
    use std::hash::{BuildHasher, Hasher};
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    (0..2u64)
        .map(|i| {
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u64(i);
            h.write_u128(now);
            h.write_u32(std::process::id());
            format!("{:016x}", h.finish())
        })
        .collect()
}

/// The doctor's own capture root: `--keep-captures DIR`, or a new directory under the system
/// temporary directory that is removed at the end.
struct DoctorRoot {
    path: PathBuf,
    keep: bool,
}

impl DoctorRoot {
    fn create(keep: Option<&Path>) -> Result<Self, Failure> {
        let (path, keep) = match keep {
            Some(dir) => (
                std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf()),
                true,
            ),
            None => (
                std::env::temp_dir().join(format!("assay-doctor-{}", marker_base())),
                false,
            ),
        };
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&path)
            .map_err(|e| {
                Failure::message(
                    format!("cannot create {}: {e}", path.display()),
                    if keep { exit::USAGE } else { exit::FAILURE },
                )
            })?;
        Ok(Self { path, keep })
    }

    /// Removes the root unless it is kept; returns the kept path.
    fn finish(self) -> Option<String> {
        if self.keep {
            Some(self.path.display().to_string())
        } else {
            let _ = std::fs::remove_dir_all(&self.path);
            None
        }
    }
}
