//! The decision log's line format, built when the first line is formatted (issue 50,
//! start-up): building it takes the policy's SHA-256, and the first SHA-256 of a process sets up
//! the hash's choice of CPU instructions (half a dozen `CPUID`s, ~7.5 µs each on a virtual
//! machine). A session that writes no line never pays for either.

use super::decision_log::DecisionFormat;
use crate::policy::PolicyDigest;

/// What [`DecisionFormat::new`] takes, and the format once built.
pub(crate) struct LazyFormat {
    session_id: String,
    source: String,
    policy: PolicyDigest,
    enforced: bool,
    built: Option<DecisionFormat>,
}

impl LazyFormat {
    /// The format of session `session_id`'s lines (see [`DecisionFormat::new`]), not built yet.
    pub(crate) fn new(
        session_id: &str,
        source: &str,
        policy: PolicyDigest,
        enforced: bool,
    ) -> Self {
        Self {
            session_id: session_id.to_owned(),
            source: source.to_owned(),
            policy,
            enforced,
            built: None,
        }
    }

    /// The format, built on the first call.
    pub(crate) fn get(&mut self) -> &mut DecisionFormat {
        let Self {
            session_id,
            source,
            policy,
            enforced,
            built,
        } = self;
        built
            .get_or_insert_with(|| DecisionFormat::new(session_id, source, policy.hex(), *enforced))
    }
}
