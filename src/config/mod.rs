//! The configuration of a session: [`WrapConfig`] — the one configuration shared by every surface
//! (wrap_config.rs) — and how it becomes the plan a session runs, in two steps with one job each:
//! `validate.rs` runs every check of SPEC §6 (typed [`crate::ConfigError`]s, nothing spawned or
//! created, nothing touched on disk but `stat`s), `resolve.rs` turns the checked configuration
//! into a `SessionPlan` (plan.rs). `WrapConfig::plan` runs them in order.
#![forbid(unsafe_code)]

mod plan;
mod resolve;
mod validate;
mod wrap_config;

use std::path::Path;

pub(crate) use plan::{LogMode, SessionPlan, StderrSink};
pub(crate) use validate::check_root;
pub use validate::load_policy;
pub use wrap_config::{DEFAULT_IDLE_DRAIN, DEFAULT_LABEL, DEFAULT_MAX_LINE_BYTES, WrapConfig};

use crate::error::{ConfigError, ConfigOption, ConfigProblem, Result};

impl WrapConfig {
    /// Runs every check of SPEC §6, then resolves the plan. Touches nothing on disk but `stat`s.
    pub(crate) fn plan(&self) -> Result<SessionPlan> {
        validate::check_sign_key(self)?;
        if let Some(root) = &self.capture_root {
            return plan_capture_root(self, root);
        }
        let checked = validate::check_options(self)?;
        if let Some(dir) = &self.capture_dir {
            validate::check_capture_dir(self, dir)?;
        }
        let paths = resolve::evidence_paths(self);
        validate::check_outputs(self, &paths, &checked.policy)?;
        Ok(resolve::session_plan(self, paths, checked.max_line_bytes))
    }
}

/// A configuration with `capture_root` (SPEC §10): none of the options it excludes, every other
/// check of SPEC §6 (on the configuration without evidence paths), an event source, and the
/// root itself. The capture directory inside the root is placed later (`capture_root.rs`).
fn plan_capture_root(config: &WrapConfig, root: &Path) -> Result<SessionPlan> {
    for (set, option) in [
        (config.capture_dir.is_some(), ConfigOption::CaptureDir),
        (config.decision_log.is_some(), ConfigOption::DecisionLog),
        (
            config.session_context_out.is_some(),
            ConfigOption::SessionContextOut,
        ),
        (
            config.session_stop_out.is_some(),
            ConfigOption::SessionStopOut,
        ),
        (config.coverage_out.is_some(), ConfigOption::CoverageOut),
    ] {
        if set {
            return Err(ConfigError::new(
                option,
                ConfigProblem::ExcludedBy {
                    other: ConfigOption::CaptureRoot,
                    why: "each run gets its own capture directory",
                },
            )
            .into());
        }
    }
    let mut base = config.clone();
    base.capture_root = None;
    base.decision_log_new = false;
    base.sign_key = None;
    let mut plan = base.plan()?;
    validate::check_capture_root(config, root)?;
    plan.capture_root = Some(root.to_path_buf());
    plan.sign_key = config.sign_key.clone();
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nul_byte_in_a_command_argument_is_a_configuration_error_found_before_anything_is_created()
    {
        let dir = tempfile::tempdir().unwrap();
        let policy = dir.path().join("p.yaml");
        std::fs::write(&policy, "version: '1'\n").unwrap();
        let root = dir.path().join("root");
        let mut c = WrapConfig::new(["/bin/cat", "a\0b"], &policy);
        c.capture_root = Some(root.clone());
        c.event_source = Some("assay://test/nul".into());
        let e = c.plan().unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Config, "{e}");
        assert!(
            e.to_string()
                .contains("argument 1 of the server command contains a NUL byte"),
            "{e}"
        );
        assert!(!root.exists());
    }

    #[test]
    fn load_policy_errors_are_configuration_errors_on_the_policy_option() {
        let dir = tempfile::tempdir().unwrap();
        let e = load_policy(&dir.path().join("none.yaml")).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Config);
        assert!(
            e.to_string().starts_with("--policy: cannot read policy "),
            "{e}"
        );
        let e = load_policy(dir.path()).unwrap_err();
        assert!(e.to_string().ends_with("is not a regular file"), "{e}");
        let bad = dir.path().join("bad.yaml");
        std::fs::write(&bad, "version: '1'\ndeny: [!!binary ZXhlYw==]\n").unwrap();
        let e = load_policy(&bad).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Config);
        let msg = e.to_string();
        assert!(
            msg.starts_with("--policy: policy file ") && msg.contains("line 2 column 8"),
            "{msg}"
        );
        let fifo = dir.path().join("p.yaml");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert!(load_policy(&fifo).is_err());
    }

    #[test]
    fn config_json_refuses_unknown_and_duplicate_keys() {
        let e = WrapConfig::from_json(r#"{"command":["x"],"policy":"p","bogus":1}"#).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::InvalidArgument);
        let e =
            WrapConfig::from_json(r#"{"command":["x"],"policy":"p","policy":"q"}"#).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::InvalidArgument);
        let c = WrapConfig::from_json(r#"{"command":["x"],"policy":"p","dry_run":true}"#).unwrap();
        assert!(c.dry_run);
        assert_eq!(c.stdin, 0);
        assert_eq!(c.stdout, 1);
    }
}
