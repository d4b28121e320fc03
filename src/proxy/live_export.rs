//! The session's side of the live OTLP exporter (`--otlp-endpoint`, SPEC §10): started before
//! anything is created, fed by the decision-log writer, finished after the log is sealed — with
//! its counts in the stop record (`otlp_export`) and a loss said once on the diagnostics sink.

use crate::config::SessionPlan;
use crate::diag::Diag;
use crate::error::{Error, ErrorKind, Result};
use crate::evidence::decision_log::DecisionLog;
use crate::evidence::event::now_rfc3339;
use crate::otlp::{Endpoint, LiveExporter, OwnedSession};
use crate::outcome::{SessionEnd, StopData};
use crate::policy::Policy;

/// The exporter of a session with an endpoint, and the tap its writer is given.
pub(super) struct Live {
    exporter: LiveExporter,
    tap: Option<crate::otlp::Tap>,
}

/// Starts the exporter thread when the plan names an endpoint.
///
/// # Errors
/// [`ErrorKind::Io`] when the thread cannot be started.
pub(super) fn start(plan: &SessionPlan) -> Result<Option<Live>> {
    let Some(url) = &plan.otlp_endpoint else {
        return Ok(None);
    };
    let endpoint = Endpoint::parse(url).map_err(|why| Error::new(ErrorKind::Internal, why))?;
    let (exporter, tap) = crate::otlp::start(endpoint, plan.server_id.clone()).map_err(|e| {
        Error::new(
            ErrorKind::Io,
            format!("cannot start the OTLP exporter thread: {e}"),
        )
    })?;
    Ok(Some(Live {
        exporter,
        tap: Some(tap),
    }))
}

impl Live {
    /// Every line `log` writes from now on is offered to the exporter.
    pub(super) fn attach(&mut self, log: Option<&mut DecisionLog>) {
        if let (Some(log), Some(tap)) = (log, self.tap.take()) {
            log.add_tap(Box::new(tap));
        }
    }

    /// Sends the session span, waits the bounded time, and records the counts in `stop`.
    pub(super) fn finish(
        self,
        started_at: &str,
        policy: &Policy,
        stop: &mut StopData,
        diag: &Diag,
    ) {
        let url = self.exporter.url();
        let session = OwnedSession {
            session_id: stop.session_id.clone(),
            start: started_at.to_string(),
            end: now_rfc3339(),
            policy_sha256: policy.sha256().to_string(),
            policy_name: Some(policy.name().to_string()),
            session_end: match stop.session_end {
                SessionEnd::ClientClosed => "client_closed",
                SessionEnd::ProxyError => "proxy_error",
            }
            .to_string(),
        };
        let report = self.exporter.finish(session);
        if let Some(m) = report.loss_message(&url) {
            diag.say(&m);
        }
        stop.otlp_export = Some(report.counts);
    }
}

/// Checks the live exporter's endpoint (SPEC §10 `--otlp-endpoint`) as a configuration error,
/// before anything is created.
pub(super) fn check_otlp_endpoint(url: Option<&str>) -> crate::error::Result<()> {
    if let Some(url) = url {
        crate::otlp::Endpoint::parse(url).map_err(|why| {
            crate::error::Error::config(crate::error::ConfigOption::OtlpEndpoint, why)
        })?;
    }
    Ok(())
}
