//! Turning a policy file's bytes into one JSON value, strictly: the format is chosen by
//! extension (`.json`, any case, is JSON; anything else is YAML, a superset, so a JSON body in a
//! `.yaml` file works too), then [`super::json`] or [`super::yaml`] reads it. Both refuse what
//! JSON and YAML readers would read differently (SPEC §5).

use std::path::Path;

use serde_json::Value;

use super::error::{Ctx, PolicyError};

/// The syntax a policy file is read as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Format {
    Json,
    Yaml,
}

impl Format {
    /// `.json` (ASCII case-insensitive) → JSON; everything else → YAML.
    pub(super) fn for_path(path: &Path) -> Format {
        match path.extension() {
            Some(ext) if ext.eq_ignore_ascii_case("json") => Format::Json,
            _ => Format::Yaml,
        }
    }
}

/// Parses `bytes` in `format` into a value; every problem is a [`PolicyError`] naming the file.
pub(super) fn parse(ctx: &Ctx<'_>, bytes: &[u8], format: Format) -> Result<Value, PolicyError> {
    match format {
        Format::Json => super::json::parse(ctx, bytes),
        Format::Yaml => super::yaml::parse(ctx, bytes),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_by_extension() {
        assert_eq!(Format::for_path(Path::new("a.json")), Format::Json);
        assert_eq!(Format::for_path(Path::new("a.JSON")), Format::Json);
        assert_eq!(Format::for_path(Path::new("a.yaml")), Format::Yaml);
        assert_eq!(Format::for_path(Path::new("a.yml")), Format::Yaml);
        assert_eq!(Format::for_path(Path::new("a")), Format::Yaml);
        assert_eq!(Format::for_path(Path::new("json")), Format::Yaml);
        assert_eq!(Format::for_path(Path::new("a.json.bak")), Format::Yaml);
    }

    #[test]
    fn a_json_body_reads_the_same_as_yaml_and_as_json() {
        let ctx = Ctx::new(Path::new("p"));
        let body = br#"{"version": "1", "deny": ["exec"], "schemas": {"t": {"maxLength": 5, "minimum": 1.5}}}"#;
        let y = parse(&ctx, body, Format::Yaml).ok();
        let j = parse(&ctx, body, Format::Json).ok();
        assert!(y.is_some());
        assert_eq!(y, j);
    }
}
