//! Every keyword of a policy schema must belong to the JSON Schema draft 2020-12 vocabularies
//! (SPEC §5): JSON Schema ignores a keyword it does not know, so a typo (`requird`) or a stray
//! YAML merge key (`<<`) would be a rule that silently does nothing.
//!
//! The walk visits every place the specification evaluates as a schema — the values of the
//! applicator, unevaluated and content keywords that hold a subschema, each member of `allOf`,
//! `anyOf`, `oneOf`, `prefixItems`, and each value of `properties`, `patternProperties`,
//! `dependentSchemas` and `$defs` (whose *keys* are property names or definition names, not
//! keywords) — and nothing else: `const`, `enum`, `default` and `examples` hold data.
//!
//! No keyword outside the seven vocabularies is accepted (in particular neither draft-07's
//! `definitions`, `dependencies` nor `additionalItems`). The meta-data (`title`,
//! `description`, `default`, `deprecated`, `readOnly`, `writeOnly`, `examples`), content
//! (`contentEncoding`, `contentMediaType`, `contentSchema`) and `$comment` keywords are
//! annotations in draft 2020-12: accepted, and they assert nothing.
//!
//! References must stay inside the tool's schema and land on a subschema: `$ref` and
//! `$dynamicRef` may be `#` (the schema, or the enclosing `$id` resource), `#/json/pointer`
//! to a place the walk visited as a schema, or `#name` for an `$anchor`/`$dynamicAnchor` of the
//! same resource. A reference into `const`, `enum` or `default` would make a value a rule, and
//! a reference to another document would not compile anyway (no resolver is built in). `$schema`
//! is accepted at a schema's root only: every policy schema is draft 2020-12.
//!
//! Compiling is bounded too: the schemas of one policy hold at most [`MAX_SUBSCHEMAS`]
//! subschemas and their JSON pointers at most [`MAX_LOCATION_BYTES`] in all, counted here before
//! anything is compiled. The walk itself keeps one pointer token per node, never a whole pointer.

use std::collections::HashSet;

use serde_json::Value;

use super::error::{Ctx, PolicyError};

/// Keywords whose value is one subschema (draft 2020-12 applicator, unevaluated, content).
const SUBSCHEMA: &[&str] = &[
    "additionalProperties",
    "contains",
    "if",
    "then",
    "else",
    "not",
    "propertyNames",
    "items",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contentSchema",
];

/// Keywords whose value is an array of subschemas.
const SUBSCHEMA_ARRAY: &[&str] = &["prefixItems", "allOf", "anyOf", "oneOf"];

/// Keywords whose value maps names to subschemas.
const SUBSCHEMA_MAP: &[&str] = &[
    "properties",
    "patternProperties",
    "dependentSchemas",
    "$defs",
];

/// The other keywords of the seven draft 2020-12 vocabularies (core, applicator, validation,
/// unevaluated, format-annotation, meta-data, content).
const OTHER: &[&str] = &[
    // core
    "$schema",
    "$id",
    "$ref",
    "$anchor",
    "$dynamicRef",
    "$dynamicAnchor",
    "$vocabulary",
    "$comment",
    // validation
    "type",
    "const",
    "enum",
    "multipleOf",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "maxContains",
    "minContains",
    "maxProperties",
    "minProperties",
    "required",
    "dependentRequired",
    // format-annotation
    "format",
    // meta-data
    "title",
    "description",
    "default",
    "deprecated",
    "readOnly",
    "writeOnly",
    "examples",
    // content
    "contentEncoding",
    "contentMediaType",
];

/// Whether `keyword` belongs to the draft 2020-12 vocabularies.
pub(super) fn is_keyword(keyword: &str) -> bool {
    SUBSCHEMA.contains(&keyword)
        || SUBSCHEMA_ARRAY.contains(&keyword)
        || SUBSCHEMA_MAP.contains(&keyword)
        || OTHER.contains(&keyword)
}

/// `token` escaped for a JSON pointer (RFC 6901).
fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// A URI fragment percent-decoded (RFC 3986), or `None` when it is malformed.
fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        if c == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(c);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Most subschemas the schemas of one policy may hold in all (objects and booleans in schema
/// places). Compiling one costs the validator 0.5–2 KiB: SPEC §5 wants loading bounded.
pub(super) const MAX_SUBSCHEMAS: usize = 10_000;

/// Most bytes the JSON pointers of all those subschemas may add up to. The validator keeps a
/// location per subschema, so a deep chain of long property names with many leaves below it
/// would cost depth × name length × leaves (a 1 MiB policy could ask for gigabytes).
pub(super) const MAX_LOCATION_BYTES: usize = 1024 * 1024;

/// What the schemas of a policy have used of those bounds so far.
#[derive(Debug, Default)]
pub(super) struct Budget {
    subschemas: usize,
    location_bytes: usize,
}

/// The place of a schema node: its last pointer token and its parent's place (an arena, so a
/// node costs its own token, never its whole pointer; pointers are built for messages only).
struct Place<'v> {
    parent: Option<usize>,
    token: Token<'v>,
    /// Length of its JSON pointer.
    len: usize,
}

#[derive(Clone, Copy)]
enum Token<'v> {
    Root,
    Name(&'v str),
    Index(usize),
}

/// The JSON pointer of `place` (RFC 6901), built from the arena.
fn pointer(places: &[Place<'_>], mut place: Option<usize>) -> String {
    let mut tokens = Vec::new();
    while let Some(i) = place {
        let Some(p) = places.get(i) else { break };
        tokens.push(p.token);
        place = p.parent;
    }
    let mut out = String::new();
    for t in tokens.iter().rev() {
        match t {
            Token::Root => {}
            Token::Name(n) => {
                out.push('/');
                out.push_str(&escape(n));
            }
            Token::Index(i) => out.push_str(&format!("/{i}")),
        }
    }
    out
}

/// A reference found by the walk.
struct Reference<'v> {
    /// `$ref` or `$dynamicRef` as written.
    value: &'v str,
    dynamic: bool,
    /// The schema holding the keyword, and the keyword.
    holder: usize,
    keyword: &'v str,
    /// The resource (`$id`, else the whole schema) the reference is resolved in.
    resource: &'v Value,
}

/// What the walk collected.
#[derive(Default)]
struct Walk<'v> {
    places: Vec<Place<'v>>,
    /// (resource address, anchor name) of every `$anchor` and `$dynamicAnchor`.
    anchors: HashSet<(usize, &'v str)>,
    /// Names of every `$dynamicAnchor`.
    dynamic_anchors: HashSet<&'v str>,
    references: Vec<Reference<'v>>,
}

impl<'v> Walk<'v> {
    /// A new place under `parent`.
    fn place(&mut self, parent: usize, token: Token<'v>) -> usize {
        let step = 1 + match token {
            Token::Root => 0,
            Token::Name(n) => n.len(),
            Token::Index(i) => i.checked_ilog10().map_or(1, |d| d as usize + 1),
        };
        let len = self.places.get(parent).map_or(0, |p| p.len) + step;
        self.places.push(Place {
            parent: Some(parent),
            token,
            len,
        });
        self.places.len() - 1
    }
}

/// A resource's identity: its address (stable while the schema is borrowed).
fn address(v: &Value) -> usize {
    std::ptr::from_ref(v) as usize
}

/// Checks the keywords and references of `tool`'s `schema`.
pub(super) fn check<'v>(
    ctx: &Ctx<'_>,
    tool: &str,
    schema: &'v Value,
    budget: &mut Budget,
) -> Result<(), PolicyError> {
    let mut walk: Walk<'v> = Walk::default();
    walk.places.push(Place {
        parent: None,
        token: Token::Root,
        len: 0,
    });
    // (value, its place, its resource)
    let mut stack: Vec<(&'v Value, usize, &'v Value)> = vec![(schema, 0, schema)];
    while let Some((value, place, resource)) = stack.pop() {
        if value.is_object() || value.is_boolean() {
            count_subschema(ctx, tool, budget, &walk, place)?;
        }
        let Value::Object(map) = value else {
            // A boolean schema holds no keywords; anything else does not compile.
            continue;
        };
        let resource = if map.contains_key("$id") {
            value
        } else {
            resource
        };
        visit_keywords(ctx, tool, &mut walk, &mut stack, map, place, resource)?;
    }
    for r in &walk.references {
        if let Some(reason) = problem(&walk, r) {
            return Err(PolicyError::BadSchemaReference {
                path: ctx.file.to_path_buf(),
                tool: tool.to_owned(),
                reference: r.value.to_owned(),
                pointer: format!("{}/{}", pointer(&walk.places, Some(r.holder)), r.keyword),
                reason,
            });
        }
    }
    Ok(())
}

/// Counts one subschema (at `place`) against the policy's budget.
fn count_subschema(
    ctx: &Ctx<'_>,
    tool: &str,
    budget: &mut Budget,
    walk: &Walk<'_>,
    place: usize,
) -> Result<(), PolicyError> {
    budget.subschemas += 1;
    budget.location_bytes += walk.places.get(place).map_or(0, |p| p.len);
    if budget.subschemas > MAX_SUBSCHEMAS || budget.location_bytes > MAX_LOCATION_BYTES {
        return Err(ctx.bad_schema(
            &format!("schemas.{tool}"),
            &format!(
                "the policy's schemas hold more than {MAX_SUBSCHEMAS} subschemas, or their locations more than {MAX_LOCATION_BYTES} bytes in all (so compiling them stays cheap); simplify them or drop schemas of tools the policy does not need to check"
            ),
        ));
    }
    Ok(())
}

/// Checks every keyword of the schema object `map` (at `place`, in `resource`): an unknown
/// keyword or a `$schema` below the root is an error; anchors and references are collected
/// into `walk`, subschemas pushed on `stack` with their places.
fn visit_keywords<'v>(
    ctx: &Ctx<'_>,
    tool: &str,
    walk: &mut Walk<'v>,
    stack: &mut Vec<(&'v Value, usize, &'v Value)>,
    map: &'v serde_json::Map<String, Value>,
    place: usize,
    resource: &'v Value,
) -> Result<(), PolicyError> {
    for (keyword, child) in map {
        if !is_keyword(keyword) {
            let at = format!("{}/{}", pointer(&walk.places, Some(place)), escape(keyword));
            return Err(PolicyError::UnknownSchemaKeyword {
                path: ctx.file.to_path_buf(),
                tool: tool.to_owned(),
                keyword: keyword.clone(),
                pointer: at,
            });
        }
        match (keyword.as_str(), child) {
            ("$schema", _) if place != 0 => {
                let at = format!("{}/$schema", pointer(&walk.places, Some(place)));
                return Err(ctx.bad_schema(
                    &format!("schemas.{tool}"),
                    &format!(
                        "`$schema` at `{}`: only a schema's root may name a dialect, and policy schemas are draft 2020-12",
                        at.escape_debug()
                    ),
                ));
            }
            ("$anchor" | "$dynamicAnchor", Value::String(name)) => {
                walk.anchors.insert((address(resource), name.as_str()));
                if keyword == "$dynamicAnchor" {
                    walk.dynamic_anchors.insert(name.as_str());
                }
            }
            ("$ref" | "$dynamicRef", Value::String(r)) => walk.references.push(Reference {
                value: r,
                dynamic: keyword == "$dynamicRef",
                holder: place,
                keyword,
                resource,
            }),
            (k, Value::Array(items)) if SUBSCHEMA_ARRAY.contains(&k) || SUBSCHEMA.contains(&k) => {
                let at = walk.place(place, Token::Name(keyword));
                for (i, item) in items.iter().enumerate() {
                    let p = walk.place(at, Token::Index(i));
                    stack.push((item, p, resource));
                }
            }
            (k, Value::Object(members)) if SUBSCHEMA_MAP.contains(&k) => {
                let at = walk.place(place, Token::Name(keyword));
                for (name, member) in members {
                    let p = walk.place(at, Token::Name(name));
                    stack.push((member, p, resource));
                }
            }
            (k, _) if SUBSCHEMA.contains(&k) => {
                let p = walk.place(place, Token::Name(keyword));
                stack.push((child, p, resource));
            }
            _ => {}
        }
    }
    Ok(())
}

/// Whether following the JSON pointer `fragment` (already percent-decoded) from the schema
/// `from` lands on a place evaluated as a schema: each step must go through a keyword that
/// holds subschemas, and an array or map step through a member of one.
fn lands_on_subschema(from: &Value, fragment: &str) -> bool {
    let mut tokens = fragment
        .split('/')
        .skip(1)
        .map(|t| t.replace("~1", "/").replace("~0", "~"));
    let mut here = from;
    while let Some(keyword) = tokens.next() {
        let Value::Object(map) = here else {
            return false;
        };
        let Some(child) = map.get(&keyword) else {
            return false;
        };
        let k = keyword.as_str();
        here = if SUBSCHEMA_MAP.contains(&k)
            || SUBSCHEMA_ARRAY.contains(&k)
            || (SUBSCHEMA.contains(&k) && child.is_array())
        {
            let Some(member) = tokens.next() else {
                return false;
            };
            match child {
                Value::Object(m) => match m.get(&member) {
                    Some(v) => v,
                    None => return false,
                },
                Value::Array(a) => match member
                    .parse::<usize>()
                    .ok()
                    .filter(|_| member == "0" || !member.starts_with('0'))
                    .and_then(|i| a.get(i))
                {
                    Some(v) => v,
                    None => return false,
                },
                _ => return false,
            }
        } else if SUBSCHEMA.contains(&k) {
            child
        } else {
            return false;
        };
    }
    here.is_object() || here.is_boolean()
}

/// Why a reference is refused, if it is.
fn problem(walk: &Walk<'_>, r: &Reference<'_>) -> Option<&'static str> {
    let Some(fragment) = r.value.strip_prefix('#') else {
        return Some("refers outside the schema");
    };
    let Some(fragment) = percent_decode(fragment) else {
        return Some("is not a valid uri fragment");
    };
    if fragment.is_empty() {
        return None;
    }
    if fragment.starts_with('/') {
        return (!lands_on_subschema(r.resource, &fragment))
            .then_some("does not point at a subschema");
    }
    let here = walk
        .anchors
        .contains(&(address(r.resource), fragment.as_str()));
    let dynamic = r.dynamic && walk.dynamic_anchors.contains(fragment.as_str());
    (!(here || dynamic)).then_some("names no anchor of the schema")
}

/// The keywords of the vocabularies, for documentation and tests.
#[cfg(test)]
fn all_keywords() -> HashSet<&'static str> {
    SUBSCHEMA
        .iter()
        .chain(SUBSCHEMA_ARRAY)
        .chain(SUBSCHEMA_MAP)
        .chain(OTHER)
        .copied()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::path::Path;

    fn run(schema: Value) -> Result<(), PolicyError> {
        check(
            &Ctx::new(Path::new("p.yaml")),
            "exec",
            &schema,
            &mut Budget::default(),
        )
    }

    #[test]
    fn schemas_are_bounded_in_size_and_location_bytes() {
        let many = json!({"allOf": vec![json!({}); MAX_SUBSCHEMAS - 1]});
        assert!(run(many).is_ok());
        let too_many = json!({"allOf": vec![json!({}); MAX_SUBSCHEMAS]});
        assert!(matches!(run(too_many), Err(PolicyError::BadSchema { .. })));
        // The budget is the policy's: two schemas of half the bound each exhaust it.
        let mut budget = Budget::default();
        let half = json!({"allOf": vec![json!(true); MAX_SUBSCHEMAS / 2]});
        let ctx = Ctx::new(Path::new("p.yaml"));
        assert!(check(&ctx, "a", &half, &mut budget).is_ok());
        assert!(check(&ctx, "b", &half, &mut budget).is_err());
        // A deep chain of long names with leaves below: refused by the location bytes.
        let name = "n".repeat(1000);
        let mut deep = json!({"allOf": vec![json!({}); 2000]});
        for _ in 0..20 {
            deep = json!({"properties": {name.clone(): deep}});
        }
        let e = run(deep);
        assert!(matches!(e, Err(PolicyError::BadSchema { .. })), "{e:?}");
    }

    fn unknown(schema: Value) -> (String, String) {
        match run(schema.clone()) {
            Err(PolicyError::UnknownSchemaKeyword {
                keyword, pointer, ..
            }) => (keyword, pointer),
            other => panic!("{schema}: {other:?}"),
        }
    }

    #[test]
    fn the_vocabularies_have_57_keywords_and_no_duplicates() {
        let n = SUBSCHEMA.len() + SUBSCHEMA_ARRAY.len() + SUBSCHEMA_MAP.len() + OTHER.len();
        assert_eq!(all_keywords().len(), n);
        assert_eq!(n, 57);
    }

    #[test]
    fn unknown_keywords_are_found_at_every_depth() {
        for (schema, keyword, pointer) in [
            (json!({"requird": ["cmd"]}), "requird", "/requird"),
            (json!({"<<": {"type": "object"}}), "<<", "/<<"),
            (
                json!({"properties": {"cmd": {"type": "string", "cosnt": "ls"}}}),
                "cosnt",
                "/properties/cmd/cosnt",
            ),
            (
                json!({"items": {"properties": {"a/b": {"enums": [1]}}}}),
                "enums",
                "/items/properties/a~1b/enums",
            ),
            (
                json!({"allOf": [{}, {"not": {"minimum": 1, "maximim": 2}}]}),
                "maximim",
                "/allOf/1/not/maximim",
            ),
            (
                json!({"$defs": {"x~y": {"definitions": {}}}}),
                "definitions",
                "/$defs/x~0y/definitions",
            ),
            (json!({"dependencies": {}}), "dependencies", "/dependencies"),
            (
                json!({"additionalItems": false}),
                "additionalItems",
                "/additionalItems",
            ),
            (
                json!({"patternProperties": {"^x": {"if": {"Type": "string"}}}}),
                "Type",
                "/patternProperties/^x/if/Type",
            ),
            (
                json!({"dependentSchemas": {"a": {"unevaluatedProperties": {"x": 1}}}}),
                "x",
                "/dependentSchemas/a/unevaluatedProperties/x",
            ),
            (
                json!({"prefixItems": [true, {"contentSchema": {"bogus": 1}}]}),
                "bogus",
                "/prefixItems/1/contentSchema/bogus",
            ),
        ] {
            assert_eq!(
                unknown(schema.clone()),
                (keyword.into(), pointer.into()),
                "{schema}"
            );
        }
    }

    #[test]
    fn names_and_data_are_not_keywords() {
        for schema in [
            json!({"type": "object", "properties": {"requird": {}, "<<": {"type": "string"}},
                   "required": ["requird"], "patternProperties": {"cosnt": true},
                   "dependentSchemas": {"anything": {}}, "$defs": {"whatever": {}}}),
            json!({"const": {"requird": 1}, "enum": [{"bogus": 2}], "default": {"x": 1},
                   "examples": [{"y": 2}]}),
            json!({"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "urn:x",
                   "$comment": "c", "title": "t", "description": "d", "deprecated": false,
                   "readOnly": true, "writeOnly": false, "contentEncoding": "base64",
                   "contentMediaType": "application/json", "contentSchema": {"type": "object"},
                   "$vocabulary": {}, "format": "uri", "dependentRequired": {"a": ["b"]}}),
            json!(true),
            json!(false),
        ] {
            assert!(
                run(schema.clone()).is_ok(),
                "{schema}: {:?}",
                run(schema.clone())
            );
        }
    }

    #[test]
    fn references_must_land_on_subschemas() {
        for schema in [
            json!({"$defs": {"p": {"type": "string"}}, "properties": {"a": {"$ref": "#/$defs/p"}}}),
            json!({"properties": {"a b": {"type": "string"}}, "items": {"$ref": "#/properties/a%20b"}}),
            json!({"$ref": "#"}),
            json!({"$defs": {"p": {"$anchor": "pa", "type": "string"}}, "items": {"$ref": "#pa"}}),
            json!({"$dynamicAnchor": "meta", "items": {"$dynamicRef": "#meta"}}),
            json!({"allOf": [{"type": "object"}], "not": {"$ref": "#/allOf/0"}}),
            json!({"$defs": {"r": {"$id": "urn:r", "$defs": {"q": true}, "$ref": "#/$defs/q"}}}),
        ] {
            assert!(
                run(schema.clone()).is_ok(),
                "{schema}: {:?}",
                run(schema.clone())
            );
        }
        for (schema, pointer) in [
            (json!({"const": {"requird": 1}, "$ref": "#/const"}), "/$ref"),
            (
                json!({"default": {"type": "string"}, "not": {"$ref": "#/default"}}),
                "/not/$ref",
            ),
            (json!({"enum": [{}], "$ref": "#/enum/0"}), "/$ref"),
            (
                json!({"properties": {"a": {}}, "$ref": "#/properties"}),
                "/$ref",
            ),
            (json!({"$ref": "#/$defs/missing"}), "/$ref"),
            (json!({"$ref": "https://example.com/s.json"}), "/$ref"),
            (json!({"$ref": "other.json#/x"}), "/$ref"),
            (json!({"$ref": "#nope"}), "/$ref"),
            (json!({"$ref": "#/%zz"}), "/$ref"),
            // `#/$defs/q` inside the `urn:r` resource is that resource's, not the root's.
            (
                json!({"$defs": {"q": true, "r": {"$id": "urn:r", "not": {"$ref": "#/$defs/q"}}}}),
                "/$defs/r/not/$ref",
            ),
        ] {
            match run(schema.clone()) {
                Err(PolicyError::BadSchemaReference { pointer: p, .. }) => {
                    assert_eq!(p, pointer, "{schema}")
                }
                other => panic!("{schema}: {other:?}"),
            }
        }
    }

    #[test]
    fn schema_dialect_only_at_the_root() {
        assert!(run(json!({"$schema": "http://json-schema.org/draft-07/schema#"})).is_ok());
        let e = run(
            json!({"properties": {"a": {"$schema": "http://json-schema.org/draft-07/schema#"}}}),
        );
        assert!(matches!(e, Err(PolicyError::BadSchema { .. })), "{e:?}");
    }

    #[test]
    fn messages_name_tool_and_pointer_on_one_line() {
        let e = run(json!({"properties": {"cmd": {"requird": true}}})).err();
        let msg = e.map(|e| e.to_string()).unwrap_or_default();
        assert!(
            msg.contains("p.yaml")
                && msg.contains("`schemas.exec`")
                && msg.contains("`requird`")
                && msg.contains("`/properties/cmd/requird`")
                && !msg.contains('\n'),
            "{msg}"
        );
        let msg = run(json!({"requird": 1}))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(msg.contains("`/requird`"), "{msg}");
    }
}
