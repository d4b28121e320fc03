//! What loading a policy costs (SPEC §5: "loading any admissible policy costs milliseconds and a
//! few MiB"): `assay policy check FILE` on the largest policies the 1 MiB bound admits, in each
//! style, and on the hostile files that used to cost seconds and hundreds of MiB (alias bombs,
//! deep nesting), which must be refused (exit 2). Wall time per run (median over interleaved
//! rounds, `assay --version` as the process floor) and peak RSS (`/usr/bin/time -f %M`).

use std::fmt::Write as _;
use std::fs;
use std::path::PathBuf;
use std::process::Command;

use super::reader::{peak_rss, timed};
use super::{Env, Res, Row, median, row};

const MIB: usize = 1024 * 1024;

/// One file to load: its name, bytes, and whether it is a valid policy (else it must be refused).
struct Case {
    name: &'static str,
    file: &'static str,
    body: Vec<u8>,
    valid: bool,
}

/// Lines of `line(i)` after `head` until the next would pass `MIB` bytes.
fn fill(head: &str, mut line: impl FnMut(usize) -> String, tail: &str) -> Vec<u8> {
    let mut s = String::from(head);
    for i in 0.. {
        let l = line(i);
        if s.len() + l.len() + tail.len() > MIB {
            break;
        }
        s.push_str(&l);
    }
    s.push_str(tail);
    s.into_bytes()
}

fn cases() -> Vec<Case> {
    let typical = br#"version: "1"
name: example
allow: ["*"]
deny: ["exec", "shell*"]
constraints:
  - tool: read_file
    params:
      path: { within: "/workspace" }
  - tool: fetch
    params:
      url: { matches: "^https://docs\\.example\\.com/" }
schemas:
  write_file: { type: object, required: [path], properties: { path: { type: string } } }
hide_refused_tools: false
"#
    .to_vec();
    // The most rules 1 MiB holds: three-letter names (`q..`, none a YAML 1.1 boolean; repeats
    // are allowed in a list).
    let name = |i: usize| {
        let b = |k: usize| char::from(b'a' + u8::try_from((i / k) % 26).unwrap_or(0));
        format!("q{}{}", b(26), b(1))
    };
    let block_deny = fill(
        "version: \"1\"\ndeny:\n",
        |i| format!("- {}\n", name(i)),
        "",
    );
    let flow_deny = fill(
        "version: \"1\"\ndeny: [",
        |i| format!("{},", name(i)),
        "last]\n",
    );
    let json_deny = fill(
        "{\"version\": \"1\", \"deny\": [",
        |i| format!("\"{}\",", name(i)),
        "\"last\"]}\n",
    );
    // Tool schemas up to the bound of 10,000 subschemas (4 per tool here).
    let mut schemas = String::from("version: \"1\"\nschemas:\n");
    for i in 0..2499 {
        let _ = write!(
            schemas,
            "  tool_{i:05}:\n    type: object\n    required: [path]\n    additionalProperties: false\n    properties:\n      path: {{type: string, maxLength: 256, pattern: \"^/workspace/\"}}\n      mode: {{enum: [read, write]}}\n"
        );
    }
    let schemas = schemas.into_bytes();
    // Compiled validators keep a location per subschema: a chain of long names with many
    // subschemas below it would cost depth × name length × leaves.
    let deep_names = {
        let mut s = String::from("version: \"1\"\nschemas:\n t: ");
        for i in 0..28 {
            let _ = write!(s, "{{properties: {{k{i}{}: ", "x".repeat(995));
        }
        s.push_str("{allOf: [");
        while s.len() + 3 + 2 * 28 + 8 < MIB {
            s.push_str("{},");
        }
        s.push_str("{}]}");
        s.push_str(&"}}".repeat(28));
        s.push('\n');
        s.into_bytes()
    };
    // The same in the document tree: a key path held per collection would cost as much.
    let deep_keys = {
        let mut s = String::from("version: \"1\"\nx:\n");
        for i in 0..60 {
            let _ = writeln!(s, "{}k{i}{}:", " ".repeat(i + 1), "x".repeat(995));
        }
        s.push_str(&" ".repeat(61));
        s.push_str("z: [");
        while s.len() + 8 < MIB {
            s.push_str("[],");
        }
        s.push_str("[]]\n");
        s.into_bytes()
    };
    let bomb = {
        let mut s = format!(
            "version: \"1\"\nx:\n a0: &a0 [{}]\n",
            vec!["x"; 200].join(",")
        );
        for i in 0..4 {
            let alias = format!("*a{i}");
            let _ = writeln!(
                s,
                " a{}: &a{} [{}]",
                i + 1,
                i + 1,
                vec![alias.as_str(); 30].join(",")
            );
        }
        s.into_bytes()
    };
    let open = "[".repeat(100_000).into_bytes();
    let open_max = "[".repeat(MIB).into_bytes();
    let in_value = format!("version: \"1\"\nallow: {}", "[".repeat(80_000)).into_bytes();
    let balanced = format!(
        "version: \"1\"\nallow: {}{}\n",
        "[".repeat(50_000),
        "]".repeat(50_000)
    )
    .into_bytes();
    let mut over = b"version: \"1\"\n".to_vec();
    over.resize(MIB + 1, b'\n');
    vec![
        Case {
            name: "typical (README example, 0.5 KiB)",
            file: "typical.yaml",
            body: typical,
            valid: true,
        },
        Case {
            name: "1 MiB deny list (174,759 names), block style",
            file: "block.yaml",
            body: block_deny,
            valid: true,
        },
        Case {
            name: "1 MiB deny list (262,138 names), flow style",
            file: "flow.yaml",
            body: flow_deny,
            valid: true,
        },
        Case {
            name: "1 MiB deny list (174,757 names), .json",
            file: "deny.json",
            body: json_deny,
            valid: true,
        },
        Case {
            name: "tool schemas at the bound (2,499 tools, 9,996 subschemas)",
            file: "schemas.yaml",
            body: schemas,
            valid: true,
        },
        Case {
            name: "alias bomb, ~1 KB (was 5.9 s, 512 MiB)",
            file: "bomb.yaml",
            body: bomb,
            valid: false,
        },
        Case {
            name: "100 KB of `[` (was 0.6 s)",
            file: "open.yaml",
            body: open,
            valid: false,
        },
        Case {
            name: "80 KB of `[` in a value (was 30 s)",
            file: "in_value.yaml",
            body: in_value,
            valid: false,
        },
        Case {
            name: "100 KB of balanced `[`…`]` (was 72 s)",
            file: "balanced.yaml",
            body: balanced,
            valid: false,
        },
        Case {
            name: "1 MiB of `[`",
            file: "open_max.yaml",
            body: open_max,
            valid: false,
        },
        Case {
            name: "1 MiB: long names 28 deep over 262,000 subschemas (was 12.7 s, 9.1 GiB)",
            file: "deep_names.yaml",
            body: deep_names,
            valid: false,
        },
        Case {
            name: "1 MiB: long keys 60 deep over 262,000 collections (was 11 s)",
            file: "deep_keys.yaml",
            body: deep_keys,
            valid: false,
        },
        Case {
            name: "1 MiB + 1 byte",
            file: "over.yaml",
            body: over,
            valid: false,
        },
    ]
}

pub(crate) fn bench_policy(env: &Env, rows: &mut Vec<Row>, rounds: usize) -> Res<()> {
    let dir = env.tmp.join("policies");
    fs::create_dir_all(&dir)?;
    let cases = cases();
    let mut paths: Vec<PathBuf> = Vec::new();
    for c in &cases {
        let p = dir.join(c.file);
        fs::write(&p, &c.body)?;
        paths.push(p);
    }
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); cases.len()];
    let mut floor = Vec::new();
    for round in 0..rounds {
        let (ms, _) = timed({
            let mut c = Command::new(&env.assay);
            c.arg("--version");
            c
        })?;
        floor.push(ms);
        for k in 0..cases.len() {
            let i = (k + round) % cases.len();
            let mut c = Command::new(&env.assay);
            c.args(["policy", "check"]).arg(&paths[i]);
            let (ms, out) = timed(c)?;
            let want = if cases[i].valid { 0 } else { 2 };
            if out.status.code() != Some(want) {
                return Err(format!(
                    "policy check {}: {} (expected exit {want}): {}",
                    cases[i].file,
                    out.status,
                    String::from_utf8_lossy(&out.stderr)
                )
                .into());
            }
            times[i].push(ms);
        }
    }
    let start = median(&mut floor);
    for (i, c) in cases.iter().enumerate() {
        let ms = median(&mut times[i]);
        let rss = peak_rss(
            &env.assay,
            &["policy".as_ref(), "check".as_ref(), paths[i].as_os_str()],
        );
        let what = if c.valid {
            "loaded"
        } else {
            "refused (exit 2)"
        };
        rows.push(row(
            "policy load",
            &format!("{} ({} bytes)", c.name, c.body.len()),
            format!(
                "{what} in {ms:.1} ms wall (process start {start:.1} ms), peak RSS {rss:.1} MiB"
            ),
            String::new(),
            "ms, a few MiB",
            "reported",
        ));
    }
    Ok(())
}
