//! The C ABI through real C and C++ compilers: the example hosts in `bindings/c` are the tests.
//!
//! Each host is compiled with warnings as errors (`gcc -std=c11 -Wall -Wextra -Werror -pedantic`,
//! `g++ -std=c++17 -Wall -Wextra -Werror`) against `include/assay.h`, linked once against
//! `libassay.so` (flags from the `assay.pc` pkg-config file, plus an rpath) and once against
//! `libassay.a` with exactly the native libraries the README lists, and run on a temporary
//! capture directory. gcc and g++ are part of the setup: a missing compiler fails, never skips.
//!
//! `ASSAY_VALGRIND=1` also runs the C host under valgrind's memcheck (definite leaks and invalid
//! accesses fail; "still reachable" memory of Rust's runtime does not).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::{Run, demo_policy, demo_server, fault_server, root, run, run_command, tempdir};

/// Where this test run's `libassay.so` and `libassay.a` are.
///
/// The C ABI crate (`crates/assay-capi`) is a dev-dependency of these tests, so Cargo builds its
/// libraries into `target/<profile>/deps` — the directory of this test binary — but copies them
/// up to `target/<profile>` only for `cargo build`. Using the copies next to the test binary means
/// the hosts always link the library this very run was built from, even on a clean checkout.
pub(crate) fn lib_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let deps = exe
        .parent()
        .expect("test binary has a directory")
        .to_path_buf();
    for dir in [
        deps.clone(),
        deps.parent().map(Path::to_path_buf).unwrap_or_default(),
    ] {
        if dir.join("libassay.so").is_file() && dir.join("libassay.a").is_file() {
            return dir;
        }
    }
    panic!(
        "libassay.so / libassay.a not found next to the test binary ({}); \
         crates/assay-capi must be a dev-dependency of these tests",
        deps.display()
    );
}

/// The native libraries the C ABI guide (docs/c-abi.md, moved out of the README) says a static
/// link needs (the backticked list on the line "Native libraries for static linking").
fn readme_native_libs() -> Vec<String> {
    let readme = std::fs::read_to_string(root().join("docs/c-abi.md")).expect("docs/c-abi.md");
    let line = readme
        .lines()
        .find(|l| l.contains("Native libraries for static linking"))
        .expect("docs/c-abi.md names the native libraries for static linking");
    let list = line
        .split('`')
        .nth(1)
        .expect("the list is in backticks on that line");
    list.split_whitespace().map(str::to_owned).collect()
}

/// Writes `assay.pc` from `bindings/c/assay.pc.in` (as scripts/build-c.sh does) into `dir`.
fn write_pc(dir: &Path) {
    let template =
        std::fs::read_to_string(root().join("bindings/c/assay.pc.in")).expect("assay.pc.in");
    let filled = template
        .replace("@PREFIX@", &root().display().to_string())
        .replace("@LIBDIR@", &lib_dir().display().to_string())
        .replace("@VERSION@", env!("CARGO_PKG_VERSION"));
    std::fs::write(dir.join("assay.pc"), filled).expect("write assay.pc");
}

fn pkg_config(pc_dir: &Path, args: &[&str]) -> Vec<String> {
    let out = Command::new("pkg-config")
        .env("PKG_CONFIG_PATH", pc_dir)
        .args(args)
        .arg("assay")
        .output()
        .unwrap_or_else(|e| panic!("pkg-config is required for the C ABI tests: {e}"));
    assert!(
        out.status.success(),
        "pkg-config {args:?} assay failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

#[derive(Clone, Copy, Debug)]
enum Link {
    /// libassay.so, with the flags from pkg-config and an rpath.
    Dynamic,
    /// libassay.a plus exactly the README's native libraries.
    Static,
}

struct Hosts {
    c: PathBuf,
    cpp: PathBuf,
}

/// The C hosts build warning-free as C11 (STYLE: the example hosts are the tests).
const C_FLAGS: &[&str] = &[
    "-std=c11",
    "-Wall",
    "-Wextra",
    "-Werror",
    "-pedantic",
    "-pthread",
];

fn compile(compiler: &str, flags: &[&str], src: &str, out: &Path, link: Link, pc_dir: &Path) {
    compile_path(
        compiler,
        flags,
        &root().join("bindings/c").join(src),
        out,
        link,
        pc_dir,
    );
}

fn compile_path(compiler: &str, flags: &[&str], src: &Path, out: &Path, link: Link, pc_dir: &Path) {
    let mut cmd = Command::new(compiler);
    cmd.args(flags).arg(src).arg("-o").arg(out);
    match link {
        Link::Dynamic => {
            cmd.args(pkg_config(pc_dir, &["--cflags", "--libs"]));
            cmd.arg(format!("-Wl,-rpath,{}", lib_dir().display()));
        }
        Link::Static => {
            cmd.args(pkg_config(pc_dir, &["--cflags"]));
            cmd.arg(lib_dir().join("libassay.a"));
            cmd.args(readme_native_libs());
        }
    }
    let shown = format!("{cmd:?}");
    let output = cmd.output().unwrap_or_else(|e| {
        panic!("{compiler} is required for the C ABI tests (they are never skipped): {e}")
    });
    assert!(
        output.status.success(),
        "compile failed: {shown}\nstdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

fn build_hosts(dir: &Path, link: Link) -> Hosts {
    write_pc(dir);
    let c = dir.join("wrap_host");
    let cpp = dir.join("host");
    compile(
        "gcc",
        &[C_FLAGS, &["-g"]].concat(),
        "wrap_host.c",
        &c,
        link,
        dir,
    );
    compile(
        "g++",
        &["-std=c++17", "-Wall", "-Wextra", "-Werror", "-g"],
        "host.cpp",
        &cpp,
        link,
        dir,
    );
    Hosts { c, cpp }
}

/// Runs a host the way a user would: without the `LD_LIBRARY_PATH` cargo sets for tests, so
/// the dynamically linked hosts find `libassay.so` through their rpath alone.
fn run_program(program: &str, args: &[String], input: &[u8]) -> Run {
    let mut cmd = Command::new(program);
    cmd.args(args).env_remove("LD_LIBRARY_PATH");
    run_command(cmd, input)
}

fn wrap_host_args(dir: &Path) -> Vec<String> {
    vec![
        dir.join("capture").display().to_string(),
        dir.join("broken").display().to_string(),
        demo_policy().display().to_string(),
        demo_server(),
    ]
}

fn stdout(run: &Run) -> String {
    String::from_utf8_lossy(&run.stdout).into_owned()
}

fn assert_has(run: &Run, needle: &str) {
    assert!(
        stdout(run).lines().any(|l| l == needle),
        "missing line {needle:?}\n{}",
        run.report()
    );
}

fn run_hosts(link: Link) {
    let dir = tempdir();
    let hosts = build_hosts(dir.path(), link);

    let run = run_program(hosts.c.to_str().unwrap(), &wrap_host_args(dir.path()), b"");
    run.expect_status(0);
    assert!(!stdout(&run).contains("CHECK FAILED"), "{}", run.report());
    for line in [
        "abi: 1",
        "closure: closed",
        "broken closure: unknown",
        "all checks passed",
    ] {
        assert_has(&run, line);
    }
    for check in [
        "NULL config_json -> status 1 (want 1)",
        "config_json \"{\" -> status 1 (want 1)",
        "unknown key -> status 1 (want 1)",
        "missing policy file -> status 2 (want 2)",
        "bad event_source -> status 2 (want 2)",
    ] {
        assert!(
            stdout(&run).contains(&format!("check ok: {check}")),
            "missing {check:?}\n{}",
            run.report()
        );
    }
    // The outcome JSON is one strict JSON object (no duplicate keys) with the SPEC §8 fields.
    let outcome = stdout(&run)
        .lines()
        .find_map(|l| l.strip_prefix("outcome: ").map(str::to_owned))
        .expect("outcome line");
    assay::strict_json::scan_str(&outcome, 32).expect("outcome JSON is strict JSON");
    let outcome: serde_json::Value = serde_json::from_str(&outcome).unwrap();
    assert_eq!(outcome["exit_code"], 0);
    assert_eq!(outcome["child_exit_code"], 0);
    assert_eq!(outcome["stop_written"], true);
    assert_eq!(outcome["decision_log"], "complete");
    assert_eq!(outcome["decision_events_written"], 2);

    let run = run_program(
        hosts.cpp.to_str().unwrap(),
        &[dir.path().join("capture").display().to_string()],
        b"",
    );
    run.expect_status(0);
    assert_has(&run, "closure: closed");
    assert_has(&run, &format!("version: {}", env!("CARGO_PKG_VERSION")));
    let run = run_program(
        hosts.cpp.to_str().unwrap(),
        &[dir.path().join("broken").display().to_string()],
        b"",
    );
    run.expect_status(0);
    assert_has(&run, "closure: unknown");
}

#[test]
fn hosts_linked_against_the_shared_library() {
    run_hosts(Link::Dynamic);
}

#[test]
fn hosts_linked_against_the_static_library_with_the_readme_native_libs() {
    run_hosts(Link::Static);
}

#[test]
fn pkg_config_file() {
    let dir = tempdir();
    write_pc(dir.path());
    let flags = pkg_config(dir.path(), &["--cflags", "--libs"]);
    assert_eq!(
        flags,
        [
            format!("-I{}", root().join("include").display()),
            format!("-L{}", lib_dir().display()),
            "-lassay".to_string(),
        ]
    );
    // `--static` adds Libs.private: it must be the README's list.
    let static_flags = pkg_config(dir.path(), &["--static", "--libs"]);
    assert_eq!(
        static_flags[2..],
        readme_native_libs()[..],
        "{static_flags:?}"
    );
    let version = pkg_config(dir.path(), &["--modversion"]);
    assert_eq!(version, [env!("CARGO_PKG_VERSION")]);
}

#[test]
fn c_host_under_valgrind() {
    if std::env::var("ASSAY_VALGRIND").as_deref() != Ok("1") {
        eprintln!("set ASSAY_VALGRIND=1 to run the C host under valgrind");
        return;
    }
    let dir = tempdir();
    let hosts = build_hosts(dir.path(), Link::Dynamic);
    let mut args = vec![
        "--leak-check=full".to_string(),
        "--errors-for-leak-kinds=definite".to_string(),
        "--error-exitcode=99".to_string(),
        // The python3 server is a separate process; memcheck looks at the host and the library.
        "--trace-children=no".to_string(),
        hosts.c.display().to_string(),
    ];
    args.extend(wrap_host_args(dir.path()));
    let run = run_program("valgrind", &args, b"");
    assert_eq!(run.status, Some(0), "valgrind run failed\n{}", run.report());
    assert_has(&run, "all checks passed");
    eprintln!("{}", run.stderr);
}

/// SPEC §3 item 3: a C host that makes its pipes with plain `pipe(2)` (no `FD_CLOEXEC`) ends
/// the session by closing its end of the client's input: the server inherits exactly 0, 1, 2.
#[test]
fn c_host_with_plain_pipes_ends_the_session_by_closing_its_input() {
    let dir = tempdir();
    write_pc(dir.path());
    let host = dir.path().join("plain_pipe_host");
    compile_path(
        "gcc",
        C_FLAGS,
        &root().join("tests/fixtures/plain_pipe_host.c"),
        &host,
        Link::Dynamic,
        dir.path(),
    );
    let cap = dir.path().join("capture");
    let r = run_program(
        host.to_str().unwrap(),
        &[
            cap.display().to_string(),
            demo_policy().display().to_string(),
            fault_server(),
        ],
        b"",
    );
    r.expect_status(0);
    assert_has(&r, "session ended");
    let log = std::fs::read_to_string(cap.join("proxy-stderr.log")).unwrap();
    assert!(log.lines().any(|l| l == "fds: 0 1 2"), "{log}");
    run(
        &["capture".into(), "read".into(), cap.display().to_string()],
        b"",
    )
    .expect_status(0);
}

/// The deepest admissible policy (SPEC §5: nesting up to 64 levels): a JSON policy whose one
/// schema nests `properties` down to level 64.
fn deepest_policy() -> String {
    fn schema(level: usize) -> String {
        if level == 63 {
            r#"{"type":"string","enum":["x"]}"#.to_string()
        } else {
            format!(
                r#"{{"type":"object","properties":{{"a":{}}}}}"#,
                schema(level + 2)
            )
        }
    }
    format!(r#"{{"version":"1","schemas":{{"t":{}}}}}"#, schema(3))
}

/// A SPEC §5-style policy: a glob allow list, a denial, a `within` constraint and a schema.
const SPEC_STYLE_POLICY: &str = r#"version: "1"
name: spec-style
allow: ["*"]
deny: ["exec", "shell*"]
constraints:
  - tool: read_file
    params:
      path: { within: "/workspace" }
schemas:
  write_file:
    type: object
    required: [path, content]
    additionalProperties: false
    properties:
      path: { type: string, pattern: "^/workspace/" }
      content: { type: string, maxLength: 1024 }
      mode: { enum: ["overwrite", "append"] }
"#;

#[test]
fn c_hosts_on_small_thread_stacks_get_their_sessions() {
    let dir = tempdir();
    write_pc(dir.path());
    let host = dir.path().join("small_stack_host");
    compile_path(
        "gcc",
        C_FLAGS,
        &root().join("tests/fixtures/small_stack_host.c"),
        &host,
        Link::Dynamic,
        dir.path(),
    );
    let deepest = dir.path().join("deepest.json");
    std::fs::write(&deepest, deepest_policy()).unwrap();
    let spec_style = dir.path().join("spec.yaml");
    std::fs::write(&spec_style, SPEC_STYLE_POLICY).unwrap();
    for (kib, policy) in [(128, &deepest), (64, &spec_style)] {
        let cap = dir.path().join(format!("capture-{kib}"));
        let r = run_program(
            host.to_str().unwrap(),
            &[
                kib.to_string(),
                policy.display().to_string(),
                cap.display().to_string(),
                "/bin/cat".to_string(),
            ],
            b"",
        );
        r.expect_status(0);
        // ASSAY_OK for both calls, and the capture is closed (ASSAY_CLOSURE_CLOSED).
        assert_eq!(
            stdout(&r),
            "wrap 0\nread 0 0\n",
            "{kib} KiB: {}",
            r.report()
        );
    }
}
