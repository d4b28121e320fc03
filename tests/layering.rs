//! Layering of the source files of each crate of the workspace (the core `src/`, the command line
//! `crates/assay-cli/src/`, the C ABI `crates/assay-capi/src/`, the Python extension
//! `bindings/python/src/`): no two files import each other, directly or around a loop. Between
//! crates, Cargo itself refuses a cycle. For each crate the test collects every
//! `crate::…`, `super::…` and `self::…` path outside `#[cfg(test)]` modules, resolves each to the
//! file that defines it, and looks for a cycle in that graph. A parent module naming one of its
//! own child modules by bare name (`child::Item`, `use child::{…}`) uses that child too; the
//! `mod child;` declaration alone does not.
//!
//! `cargo test --test tests layering -- --nocapture` prints the module map (file → files it uses).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use regex::Regex;

use crate::util::root;

type Graph = BTreeMap<String, BTreeSet<String>>;

/// Every library source file, relative to `src/`, with its text.
fn sources(src: &Path) -> BTreeMap<String, String> {
    fn walk(dir: &Path, src: &Path, out: &mut BTreeMap<String, String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, src, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path
                    .strip_prefix(src)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                out.insert(rel, std::fs::read_to_string(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(src, src, &mut out);
    out.retain(|rel, _| {
        // Test-only files are not part of the layering.
        !rel.ends_with("tests.rs") && !rel.ends_with("testutil.rs") && !rel.contains("tests/")
    });
    out
}

/// The module path of a file: `policy/mod.rs` → `[policy]`, `policy/glob.rs` → `[policy, glob]`.
fn module_of(rel: &str) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .trim_end_matches(".rs")
        .split('/')
        .map(String::from)
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

/// The file defining the longest prefix of `path` that is a module.
fn resolve(files: &BTreeMap<String, String>, path: &[String]) -> Option<String> {
    (0..=path.len()).rev().find_map(|n| {
        let prefix = path[..n].join("/");
        let candidates = if n == 0 {
            vec!["lib.rs".to_string()]
        } else {
            vec![format!("{prefix}.rs"), format!("{prefix}/mod.rs")]
        };
        candidates.into_iter().find(|c| files.contains_key(c))
    })
}

/// The code of a file without its `#[cfg(test)]` modules (they sit at the end) and comments.
fn library_code(text: &str) -> String {
    let test_mod = Regex::new(r"#\[cfg\(test\)\]\s*(pub(\(crate\))?\s+)?mod\s").unwrap();
    let text = match test_mod.find(text) {
        Some(m) => &text[..m.start()],
        None => text,
    };
    // Comments go (doc links name modules without importing them). A `//` inside a string
    // literal cuts the rest of that line only, which never holds an import.
    text.lines()
        .map(|l| l.find("//").map_or(l, |i| &l[..i]))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The child modules a file declares with `mod name;` (outside its `#[cfg(test)]` modules).
fn child_modules(code: &str) -> Vec<String> {
    let decl = Regex::new(r"(?m)^\s*(?:pub(?:\([a-z]+\))?\s+)?mod\s+([A-Za-z_][A-Za-z0-9_]*)\s*;")
        .unwrap();
    decl.captures_iter(code).map(|c| c[1].to_string()).collect()
}

/// File → files it names through `crate::`, `super::` or `self::` paths, or through a child
/// module's bare name.
fn import_graph(files: &BTreeMap<String, String>) -> Graph {
    let path_re = Regex::new(
        r"(?:^|[^:\w])(crate|super|self)((?:::(?:super|[A-Za-z_][A-Za-z0-9_]*))*)(?:::\{([^;]*?)\})?",
    )
    .unwrap();
    let mut graph = Graph::new();
    for (rel, text) in files {
        let me = module_of(rel);
        let edges = graph.entry(rel.clone()).or_default();
        let code = library_code(text);
        for cap in path_re.captures_iter(&code) {
            let rest: Vec<&str> = cap[2].split("::").filter(|s| !s.is_empty()).collect();
            let group = cap.get(3).map(|g| g.as_str());
            if rest.is_empty() && group.is_none() {
                continue; // `pub(crate)`, `&self`, …
            }
            let mut base: Vec<String> = match &cap[1] {
                "crate" => Vec::new(),
                // `super` of `a/b.rs` is `a`; of `a/b/mod.rs` it is `a` as well.
                "super" => me[..me.len().saturating_sub(1)].to_vec(),
                _ => me.clone(),
            };
            for seg in rest {
                if seg == "super" {
                    base.pop();
                } else {
                    base.push(seg.to_string());
                }
            }
            let mut targets = Vec::new();
            match group {
                Some(g) => {
                    for item in g.split(',') {
                        let first = item.trim().trim_start_matches('{').split("::").next();
                        match first.map(str::trim) {
                            Some("self") | Some("") | None => targets.push(base.clone()),
                            Some(name) => {
                                let mut p = base.clone();
                                p.push(name.to_string());
                                targets.push(p);
                            }
                        }
                    }
                }
                None => targets.push(base),
            }
            for t in targets {
                if let Some(file) = resolve(files, &t) {
                    if &file != rel {
                        edges.insert(file);
                    }
                }
            }
        }
        // A child module named by its bare name: `child::Item`, `use child::{…}`.
        for child in child_modules(&code) {
            let bare = Regex::new(&format!(r"(?:^|[^:\w]){child}::")).unwrap();
            if bare.is_match(&code) {
                let mut t = me.clone();
                t.push(child);
                if let Some(file) = resolve(files, &t) {
                    if &file != rel {
                        edges.insert(file);
                    }
                }
            }
        }
    }
    graph
}

/// Every group of files that import each other around a loop (the strongly connected
/// components with more than one file), each sorted, in a stable order.
fn cycles(graph: &Graph) -> Vec<Vec<String>> {
    // Files that reach each other: `a` reaches `b` and `b` reaches `a`.
    let reach = |from: &str| -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.to_string()];
        while let Some(f) = todo.pop() {
            for next in graph.get(&f).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    todo.push(next.clone());
                }
            }
        }
        seen
    };
    let reached: BTreeMap<&String, BTreeSet<String>> =
        graph.keys().map(|k| (k, reach(k))).collect();
    let mut groups: BTreeSet<Vec<String>> = BTreeSet::new();
    for (file, from_file) in &reached {
        if !from_file.contains(*file) {
            continue;
        }
        let group: Vec<String> = from_file
            .iter()
            .filter(|other| reached.get(other).is_some_and(|r| r.contains(*file)))
            .cloned()
            .collect();
        groups.insert(group);
    }
    groups.into_iter().collect()
}

/// One cycle in `graph`, if there is any (depth-first search with an explicit stack).
fn find_cycle(graph: &Graph) -> Option<Vec<String>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        Open,
        Done,
    }
    let mut marks: BTreeMap<&str, Mark> = BTreeMap::new();
    for start in graph.keys() {
        if marks.contains_key(start.as_str()) {
            continue;
        }
        let mut path: Vec<&str> = vec![start];
        let mut iters = vec![graph[start].iter()];
        marks.insert(start, Mark::Open);
        while let Some(it) = iters.last_mut() {
            match it.next() {
                Some(next) => match marks.get(next.as_str()) {
                    Some(Mark::Open) => {
                        let from = path.iter().position(|p| *p == next).unwrap();
                        let mut cycle: Vec<String> =
                            path[from..].iter().map(|s| s.to_string()).collect();
                        cycle.push(next.clone());
                        return Some(cycle);
                    }
                    Some(Mark::Done) => {}
                    None => {
                        marks.insert(next, Mark::Open);
                        path.push(next);
                        iters.push(graph.get(next).map(|s| s.iter()).unwrap_or_default());
                    }
                },
                None => {
                    let done = path.pop().unwrap();
                    marks.insert(done, Mark::Done);
                    iters.pop();
                }
            }
        }
    }
    None
}

/// Reads the crate sources under `src`, prints their module map and panics on an import cycle.
fn check_no_cycle(src: &Path, min_files: usize) -> Graph {
    let files = sources(src);
    assert!(
        files.len() >= min_files,
        "read {} files from {}",
        files.len(),
        src.display()
    );
    let graph = import_graph(&files);
    println!("module map of {} (file -> files it uses):", src.display());
    for (file, uses) in &graph {
        let uses: Vec<&str> = uses.iter().map(String::as_str).collect();
        println!("  {file} -> {}", uses.join(", "));
    }
    let groups = cycles(&graph);
    for group in &groups {
        println!("files importing each other: {}", group.join(", "));
    }
    if let Some(cycle) = find_cycle(&graph) {
        panic!(
            "import cycle between source files of {}: {} ({} group(s) in all, listed above)",
            src.display(),
            cycle.join(" -> "),
            groups.len()
        );
    }
    println!("no import cycle among {} files", graph.len());
    graph
}

#[test]
fn no_import_cycle_between_source_files() {
    // ASSAY_LAYERING_SRC points the check at another tree (e.g. an older checkout's src/).
    let src = std::env::var_os("ASSAY_LAYERING_SRC")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("src"));
    let graph = check_no_cycle(&src, 40);
    // A file that is known to import others must show them, or the parser has gone blind.
    assert!(
        graph["proxy/mod.rs"].contains("sys/child/mod.rs"),
        "{:?}",
        graph["proxy/mod.rs"]
    );
    assert!(graph["policy/decide.rs"].contains("policy/glob.rs"));
    // A parent's bare-name use of its child is an edge as well.
    assert!(
        graph["proxy/mod.rs"].contains("proxy/workers.rs"),
        "{:?}",
        graph["proxy/mod.rs"]
    );
}

/// Folders of the core that a lower one never imports: the digest type sits beside the one
/// SHA-256 (`sha256.rs`), the pins file and its diff below the policy (`pins_file/`), and only
/// the live listing (`pins/`) above the proxy, the signer and verifier of captures
/// (`attestation/`) above the reader. Each rule: a folder, and the folders above it.
const NOT_IMPORTED_FROM_BELOW: &[(&str, &[&str])] = &[
    (
        "canonical/",
        &["evidence/", "pins/", "pins_file/", "policy/", "proxy/"],
    ),
    ("pins_file/", &["evidence/", "pins/", "policy/", "proxy/"]),
    ("policy/", &["capture/", "evidence/", "pins/", "proxy/"]),
    (
        "evidence/",
        &["attestation/", "capture/", "pins/", "proxy/"],
    ),
    ("capture/", &["attestation/"]),
    ("proxy/", &["pins/"]),
    // The span encoder and the live exporter sit below the proxy and the export.
    ("otlp/", &["capture/", "export/", "pins/", "proxy/"]),
    ("capture/", &["export/"]),
];

#[test]
fn lower_folders_import_nothing_above_them() {
    let graph = check_no_cycle(&root().join("src"), 40);
    let mut wrong = Vec::new();
    for (folder, above) in NOT_IMPORTED_FROM_BELOW {
        for (file, uses) in graph.iter().filter(|(f, _)| f.starts_with(folder)) {
            for used in uses {
                if above.iter().any(|a| used.starts_with(a)) {
                    wrong.push(format!("{file} -> {used}"));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "imports that run back up: {wrong:?}");
    // The rules name folders that exist, or they check nothing.
    for (folder, above) in NOT_IMPORTED_FROM_BELOW {
        for f in std::iter::once(folder).chain(above.iter()) {
            assert!(graph.keys().any(|k| k.starts_with(f)), "no file under {f}");
        }
    }
}

#[test]
fn no_import_cycle_in_the_surface_crates() {
    let cli = check_no_cycle(&root().join("crates/assay-cli/src"), 10);
    assert!(cli["pin.rs"].contains("messages.rs"), "{:?}", cli["pin.rs"]);
    let capi = check_no_cycle(&root().join("crates/assay-capi/src"), 4);
    assert!(
        capi["lib.rs"].contains("strings.rs"),
        "{:?}",
        capi["lib.rs"]
    );
    check_no_cycle(&root().join("bindings/python/src"), 3);
}

#[test]
fn the_cycle_check_finds_cycles() {
    // The checker itself, on files written the way the library's are.
    let files: BTreeMap<String, String> = [
        ("lib.rs", "pub mod a;\npub mod b;\nmod c;\n"),
        ("a.rs", "use crate::b::Thing;\n"),
        ("b.rs", "use super::c::{self, Other};\n"),
        (
            "c.rs",
            "pub(crate) fn f(x: &crate::a::A) {}\n#[cfg(test)]\nmod tests { use crate::lib; }\n",
        ),
        ("d/mod.rs", "mod e;\nuse self::e::E;\n"),
        ("d/e.rs", "use super::{D, F};\n"),
        // A parent naming its child by bare name, and the child using the parent.
        (
            "f/mod.rs",
            "mod g;\nmod h;\npub use g::G;\nfn k() { h::run(); }\n",
        ),
        ("f/g.rs", "pub struct G;\n"),
        ("f/h.rs", "use super::G;\n"),
        // The declaration alone is no use.
        ("i/mod.rs", "pub(crate) mod j;\n"),
        ("i/j.rs", "use super::I;\n"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let graph = import_graph(&files);
    assert_eq!(graph["a.rs"], BTreeSet::from(["b.rs".to_string()]));
    assert_eq!(graph["b.rs"], BTreeSet::from(["c.rs".to_string()]));
    assert_eq!(graph["c.rs"], BTreeSet::from(["a.rs".to_string()]));
    assert_eq!(graph["d/e.rs"], BTreeSet::from(["d/mod.rs".to_string()]));
    assert_eq!(
        graph["f/mod.rs"],
        BTreeSet::from(["f/g.rs".to_string(), "f/h.rs".to_string()])
    );
    assert_eq!(graph["f/h.rs"], BTreeSet::from(["f/mod.rs".to_string()]));
    assert!(graph["i/mod.rs"].is_empty(), "{:?}", graph["i/mod.rs"]);
    assert_eq!(
        cycles(&graph),
        vec![
            vec!["a.rs".to_string(), "b.rs".to_string(), "c.rs".to_string()],
            vec!["d/e.rs".to_string(), "d/mod.rs".to_string()],
            vec!["f/h.rs".to_string(), "f/mod.rs".to_string()],
        ]
    );
    let cycle = find_cycle(&graph).expect("a -> b -> c -> a and d <-> d/e are cycles");
    assert!(cycle.len() >= 3, "{cycle:?}");
    // Without the back edges there is none.
    let mut acyclic = graph.clone();
    acyclic.get_mut("c.rs").unwrap().clear();
    acyclic.get_mut("d/e.rs").unwrap().clear();
    acyclic.get_mut("f/h.rs").unwrap().clear();
    assert_eq!(find_cycle(&acyclic), None);
    assert!(cycles(&acyclic).is_empty());
}
