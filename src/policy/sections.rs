//! The compiled SPEC §5.2 sections of a policy: `resources`, `prompts`, `client_features`,
//! `limits`, `record_arguments` and `redact`, and the §5.3 `results` (the questions on `Policy` are in `governed`).

use serde_json::{Map, Value};

use super::client_features::ClientFeatures;
use super::error::{Ctx, PolicyError};
use super::limits::Limits;
use super::prompts::Prompts;
use super::redact::ArgumentRecord;
use super::resources::Resources;
use super::results::Results;

/// The compiled §5.2 sections of a policy.
#[derive(Default)]
pub(crate) struct Sections {
    pub(crate) resources: Option<Resources>,
    pub(crate) prompts: Option<Prompts>,
    pub(crate) client_features: Option<ClientFeatures>,
    pub(crate) limits: Option<Limits>,
    pub(crate) arguments: ArgumentRecord,
    pub(crate) results: Option<Results>,
    /// `record_definitions` (`false` when absent): a capture keeps the tool definitions its
    /// listings showed (`docs/policy.md`, "Definitions kept for `policy suggest`").
    pub(crate) record_definitions: bool,
}

impl Sections {
    /// Compiles the sections present in the policy's top-level mapping.
    pub(crate) fn parse(ctx: &Ctx<'_>, top: &Map<String, Value>) -> Result<Sections, PolicyError> {
        Ok(Sections {
            resources: top
                .get("resources")
                .map(|v| Resources::parse(ctx, v))
                .transpose()?,
            prompts: top
                .get("prompts")
                .map(|v| Prompts::parse(ctx, v))
                .transpose()?,
            client_features: top
                .get("client_features")
                .map(|v| ClientFeatures::parse(ctx, v))
                .transpose()?,
            limits: top
                .get("limits")
                .map(|v| Limits::parse(ctx, v))
                .transpose()?,
            arguments: ArgumentRecord::parse(ctx, top.get("record_arguments"), top.get("redact"))?,
            results: top
                .get("results")
                .map(|v| Results::parse(ctx, v))
                .transpose()?,
            record_definitions: ctx.flag(top.get("record_definitions"), "record_definitions")?,
        })
    }
}
