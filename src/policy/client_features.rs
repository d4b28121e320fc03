//! The `client_features` section (SPEC §5.2): what the server may ask of the client.
//!
//! ```yaml
//! client_features:
//!   sampling: deny      # sampling/createMessage; sampling input requests (2026-07-28)
//!   elicitation: allow  # elicitation/create; elicitation input requests
//!   roots: allow        # roots/list; roots input requests
//! ```
//!
//! Each key is optional and takes `allow` or `deny`; a feature the section does not name is not
//! governed (its requests are forwarded as before, with no event). The section must name at
//! least one feature.

use serde_json::Value;

use super::decision::{Decision, ReasonCode, Verdict};
use super::error::{Ctx, PolicyError};

pub use crate::methods::ClientFeature;

/// A feature's slot in the compiled rules.
fn index(f: ClientFeature) -> usize {
    match f {
        ClientFeature::Sampling => 0,
        ClientFeature::Elicitation => 1,
        ClientFeature::Roots => 2,
    }
}

/// The compiled section: per feature, `Some(true)` allow, `Some(false)` deny, `None` not named.
pub(crate) struct ClientFeatures {
    rules: [Option<bool>; 3],
}

impl ClientFeatures {
    /// Compiles the section (`v` is the value of `client_features`).
    pub(crate) fn parse(ctx: &Ctx<'_>, v: &Value) -> Result<ClientFeatures, PolicyError> {
        let keys: Vec<&str> = ClientFeature::ALL.iter().map(|f| f.as_str()).collect();
        let obj = ctx.object(
            v,
            "client_features",
            "a mapping of sampling, elicitation and roots to allow or deny",
        )?;
        ctx.check_keys(obj, "client_features", &keys)?;
        if obj.is_empty() {
            return Err(ctx.invalid(
                "client_features",
                "is empty; name sampling, elicitation or roots (allow or deny), or remove the key",
            ));
        }
        let mut rules = [None; 3];
        for feature in ClientFeature::ALL {
            let Some(value) = obj.get(feature.as_str()) else {
                continue;
            };
            let key = format!("client_features.{}", feature.as_str());
            let allow = match value.as_str() {
                Some("allow") => true,
                Some("deny") => false,
                _ => {
                    return Err(ctx.invalid(&key, "must be the string allow or the string deny"));
                }
            };
            if let Some(slot) = rules.get_mut(index(feature)) {
                *slot = Some(allow);
            }
        }
        Ok(ClientFeatures { rules })
    }

    /// `Some(true)` when the section allows `feature`, `Some(false)` when it denies it, `None`
    /// when it does not name it.
    pub(crate) fn rule(&self, feature: ClientFeature) -> Option<bool> {
        self.rules.get(index(feature)).copied().flatten()
    }

    /// Judges a request for `feature`; `None` when the section does not name it.
    pub(crate) fn evaluate(&self, feature: ClientFeature) -> Option<Verdict> {
        let allow = self.rule(feature)?;
        let name = feature.as_str();
        Some(Verdict {
            decision: if allow {
                Decision::Allow
            } else {
                Decision::Deny
            },
            reason_code: if allow {
                ReasonCode::P_POLICY_ALLOW
            } else {
                ReasonCode::P_CLIENT_FEATURE_DENIED
            },
            reason: if allow {
                format!("client_features allows {name}")
            } else {
                format!("client_features denies {name}")
            },
            matched_rule: Some(format!("client_features.{name}")),
        })
    }
}
