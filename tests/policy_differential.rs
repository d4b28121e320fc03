//! The policy-reader differential (SPEC §5): for every policy file we load, the value our
//! reader builds equals what PyYAML `safe_load` reads from the same bytes (and, for `.json`
//! files, what Python's `json` reads) — or we refuse the file.
//!
//! tests/fixtures/policy_yaml.py writes the corpus (the hand-written attacks of the red-team
//! passes plus generated documents in every YAML style, salted with the scalars and constructs
//! readers disagree on) and reports PyYAML's reading of each file; the library reads the same
//! files through `assay::fuzzing::policy_document` (the tree `Policy` compiles). PyYAML is pinned
//! in python/requirements-test.txt: `$ASSAY_TEST_PYTHON` (scripts/test.sh points it at the repo
//! .venv), else `python3`; without PyYAML it is skipped outside CI (`CI=true`).

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::util::*;

/// Runs the fixture; one JSON line per file.
fn pyyaml(args: &[&str]) -> Vec<Value> {
    let out = Command::new(python())
        .arg(root().join("tests/fixtures/policy_yaml.py"))
        .args(args)
        .output()
        .expect("run tests/fixtures/policy_yaml.py");
    assert!(
        out.status.success(),
        "policy_yaml.py failed (is PyYAML installed? pip install -r python/requirements-test.txt): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).expect("a JSON line"))
        .collect()
}

/// Compares every file of `dir` the fixture described; returns (accepted, refused).
fn compare(dir: &Path, lines: &[Value]) -> (usize, usize) {
    let mut accepted = 0;
    let mut refused = 0;
    let mut mismatches = Vec::new();
    for line in lines {
        let name = line["file"].as_str().expect("file");
        let bytes = std::fs::read(dir.join(name)).expect("read a corpus file");
        let json = name.ends_with(".json");
        match assay::fuzzing::policy_document(&bytes, json) {
            Err(_) => refused += 1,
            Ok(ours) => {
                accepted += 1;
                let expected = serde_json::json!({ "value": ours });
                if line["pyyaml"] != expected {
                    mismatches.push(format!(
                        "{name}: we read {ours}\n  pyyaml: {}\n  text: {:?}",
                        line["pyyaml"],
                        String::from_utf8_lossy(&bytes)
                    ));
                }
                if json && line["json"] != expected {
                    mismatches.push(format!(
                        "{name}: we read {ours}\n  json: {}\n  text: {:?}",
                        line["json"],
                        String::from_utf8_lossy(&bytes)
                    ));
                }
            }
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} of {} files we load read differently:\n{}",
        mismatches.len(),
        lines.len(),
        mismatches.join("\n")
    );
    (accepted, refused)
}

#[test]
fn what_we_load_is_what_pyyaml_reads() {
    if !can_run(
        "policy_differential::what_we_load_is_what_pyyaml_reads",
        &[Needs::PythonVenv],
    ) {
        return;
    }
    let dir = tempdir();
    let count = std::env::var("ASSAY_POLICY_CORPUS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1500usize);
    let seed = std::env::var("ASSAY_POLICY_SEED").unwrap_or_else(|_| "28".into());
    let lines = pyyaml(&[
        "corpus",
        &dir.path().display().to_string(),
        &count.to_string(),
        &seed,
    ]);
    assert!(
        lines.len() > count,
        "the corpus holds the hand-written cases too"
    );
    let (accepted, refused) = compare(dir.path(), &lines);
    eprintln!("{accepted} files accepted, {refused} refused");
    // The differential must compare something: a good share of the corpus is loadable.
    assert!(
        accepted * 5 >= lines.len(),
        "only {accepted} of {} files were accepted ({refused} refused)",
        lines.len()
    );
}

/// The rules PyYAML's reading of a policy file stands for, in the shape of
/// `assay policy check --format json` (`assay.policy.summary.v1`).
fn rules_of(tree: &Value, stem: &str) -> Value {
    let lists = tree.get("tools").unwrap_or(tree);
    let constraints: Vec<Value> = tree["constraints"]
        .as_array()
        .map(|cs| {
            cs.iter()
                .map(|c| {
                    let mut params: Vec<(&String, &Value)> = c["params"]
                        .as_object()
                        .map(|p| p.iter().collect())
                        .unwrap_or_default();
                    params.sort_by(|a, b| a.0.cmp(b.0));
                    let params: Vec<Value> = params
                        .into_iter()
                        .map(|(name, rule)| {
                            let within = match &rule["within"] {
                                Value::String(s) => serde_json::json!([s]),
                                other => other.clone(),
                            };
                            serde_json::json!({"name": name, "matches": rule["matches"], "within": within})
                        })
                        .collect();
                    serde_json::json!({"tool": c["tool"], "params": params})
                })
                .collect()
        })
        .unwrap_or_default();
    let governed: Vec<&str> = ["resources", "prompts", "client_features", "limits"]
        .into_iter()
        .filter(|k| tree.get(*k).is_some())
        .collect();
    serde_json::json!({
        "name": tree.get("name").cloned().unwrap_or_else(|| Value::from(stem)),
        "deny": lists.get("deny").cloned().unwrap_or_else(|| serde_json::json!([])),
        "allow": lists.get("allow").cloned().unwrap_or(Value::Null),
        "constraints": constraints,
        "schemas": tree.get("schemas").cloned().unwrap_or_else(|| serde_json::json!({})),
        "hide_refused_tools": tree.get("hide_refused_tools").cloned().unwrap_or(Value::Bool(false)),
        // SPEC §5.2: each section as PyYAML reads it, `null` when absent.
        "governed": governed,
        "resources": patterns_of(tree.get("resources")),
        "prompts": patterns_of(tree.get("prompts")),
        "client_features": tree.get("client_features").cloned().unwrap_or(Value::Null),
        "limits": tree.get("limits").map_or(Value::Null, |l| serde_json::json!({
            "tool_calls": l.get("tool_calls").cloned().unwrap_or(Value::Null),
            "per_tool": l.get("per_tool").cloned().unwrap_or_else(|| serde_json::json!({})),
            "repeated_call": l.get("repeated_call").cloned().unwrap_or(Value::Null),
        })),
        "record_arguments": tree.get("record_arguments").cloned().unwrap_or(Value::Bool(false)),
        "redact": tree.get("redact").cloned().unwrap_or_else(|| serde_json::json!([])),
    })
}

/// The `allow`/`deny` of a `resources` or `prompts` section as PyYAML reads it.
fn patterns_of(section: Option<&Value>) -> Value {
    section.map_or(Value::Null, |s| {
        serde_json::json!({
            "allow": s.get("allow").cloned().unwrap_or(Value::Null),
            "deny": s.get("deny").cloned().unwrap_or_else(|| serde_json::json!([])),
        })
    })
}

/// End to end: for every hand-written policy `assay policy check` accepts, the rules it prints
/// are the rules PyYAML reads from the file.
#[test]
fn the_rules_policy_check_prints_are_the_rules_pyyaml_reads() {
    if !can_run(
        "policy_differential::the_rules_policy_check_prints_are_the_rules_pyyaml_reads",
        &[Needs::PythonVenv],
    ) {
        return;
    }
    let dir = tempdir();
    let lines = pyyaml(&["corpus", &dir.path().display().to_string(), "0", "1"]);
    let mut compared = 0;
    let mut governing = 0;
    for line in &lines {
        let name = line["file"].as_str().expect("file");
        let path = dir.path().join(name);
        let r = run(
            &[
                "policy".into(),
                "check".into(),
                "--format".into(),
                "json".into(),
                path.display().to_string(),
            ],
            b"",
        );
        if r.status != Some(0) {
            assert_eq!(r.status, Some(2), "{}", r.report());
            continue;
        }
        let ours: Value = serde_json::from_slice(&r.stdout).expect("summary JSON");
        let tree = &line["pyyaml"]["value"];
        assert!(tree.is_object(), "{name}: PyYAML read {}", line["pyyaml"]);
        let stem = name.rsplit_once('.').map_or(name, |(s, _)| s);
        let mut got = ours.clone();
        // Pins are a file the policy names, not a rule PyYAML reads from this file (and none of
        // these policies names one).
        assert!(ours["pins"].is_null(), "{name}");
        for k in ["schema", "sha256", "declared_tools", "pins"] {
            got.as_object_mut().map(|o| o.remove(k));
        }
        assert_eq!(got, rules_of(tree, stem), "{name}");
        assert_eq!(ours["sha256"], sha256_file(&path).as_str());
        compared += 1;
        if ours["governed"].as_array().is_some_and(|g| !g.is_empty()) {
            governing += 1;
        }
    }
    assert!(
        compared >= 5,
        "only {compared} hand-written policies were valid"
    );
    assert!(
        governing >= 4,
        "only {governing} valid hand-written policies have SPEC §5.2 sections"
    );
}
