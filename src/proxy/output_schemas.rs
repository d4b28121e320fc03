//! The output schemas `results.output_schema` checks a `tools/call` answer's `structuredContent`
//! against (SPEC §5.3): the pinned definition's `outputSchema` (SPEC §5.1) when the policy has
//! pins, else the one the session's latest `tools/list` answer gave for that tool.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::policy::Policy;

/// The session's judge of answers: the policy's `results` and the tools' output schemas.
pub(crate) struct AnswerStage {
    /// Output schemas by tool name: pinned ones (fixed), listed ones (as the session lists).
    schemas: Mutex<HashMap<String, Arc<jsonschema::Validator>>>,
    /// Whether schemas come from pins only (a listing does not replace them).
    pub(crate) pinned: bool,
}

fn output_schema(tool: &Value) -> Option<Arc<jsonschema::Validator>> {
    let schema = tool.get("outputSchema")?;
    jsonschema::draft202012::options()
        .with_pattern_options(jsonschema::PatternOptions::regex())
        .build(schema)
        .ok()
        .map(Arc::new)
}

impl AnswerStage {
    /// The stage of a session under `policy`; `None` without a `results` section.
    pub(crate) fn new(policy: &Policy) -> Option<AnswerStage> {
        let results = policy.results()?;
        let mut schemas = HashMap::new();
        let pins = policy.pins().filter(|_| results.output_schema().is_some());
        if let Some(pins) = pins {
            for (name, pin) in pins.iter() {
                let tool = serde_json::from_str::<Value>(pin.definition()).ok();
                if let Some(v) = tool.as_ref().and_then(output_schema) {
                    schemas.insert(name.to_owned(), v);
                }
            }
        }
        Some(AnswerStage {
            schemas: Mutex::new(schemas),
            pinned: pins.is_some(),
        })
    }

    pub(crate) fn schema(&self, tool: Option<&str>) -> Option<Arc<jsonschema::Validator>> {
        let map = self
            .schemas
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        map.get(tool?).cloned()
    }

    /// A `tools/list` answer without pins: remembers each listed tool's `outputSchema`.
    pub(crate) fn listed(&self, line: &[u8]) {
        let Ok(v) = serde_json::from_slice::<Value>(line) else {
            return;
        };
        let messages = match &v {
            Value::Array(a) => a.iter().collect(),
            one => vec![one],
        };
        let mut map = self
            .schemas
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for m in messages {
            let tools = m.pointer("/result/tools").and_then(Value::as_array);
            for tool in tools.into_iter().flatten() {
                if let Some(name) = tool.get("name").and_then(Value::as_str) {
                    match output_schema(tool) {
                        Some(s) => map.insert(name.to_owned(), s),
                        None => map.remove(name),
                    };
                }
            }
        }
    }
}
