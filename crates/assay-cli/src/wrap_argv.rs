//! `assay mcp wrap`'s command line in its common form, read without building clap's parser.
//!
//! Building clap's command line for `mcp wrap` and parsing with it took about 0.15 ms of every
//! wrapper's start-up (SPEC §11 targets its start-up; docs/decisions.md, "The common wrap
//! command line read without clap"). A host runs the wrapper in one form:
//! long options, each value in the argument after its option or attached with `=`, then `--`
//! and the server's command. [`read`] reads exactly that form and nothing else: any argument
//! it does not know for certain how clap reads (a short option, a value that starts with `-` or
//! is empty, a flag with a value, an option given twice, an option whose value clap converts,
//! no `--`) makes it decline, and the full parser reads the whole command line, errors and help
//! included. Tests hold it to clap's parse on generated command lines: whatever it reads, clap
//! reads the same.

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;

use assay::{ConfigOption, WrapConfig};

use crate::args::{DEFAULT_POLICY, wrap_config};

/// What an argument before `--` is to [`read`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Known {
    /// An option that takes a value, by the library's name of it.
    Valued(ConfigOption),
    /// `--decision-log-new`.
    DecisionLogNew,
    /// `--dry-run`.
    DryRun,
    /// `--verbose`.
    Verbose,
}

/// The options with a value [`read`] takes, each spelled `--` and its identifier.
const VALUED: [ConfigOption; 11] = [
    ConfigOption::Policy,
    ConfigOption::EventSource,
    ConfigOption::Label,
    ConfigOption::DecisionLog,
    ConfigOption::SessionContextOut,
    ConfigOption::SessionStopOut,
    ConfigOption::CoverageOut,
    ConfigOption::CaptureDir,
    ConfigOption::CaptureRoot,
    ConfigOption::SignKey,
    ConfigOption::OtlpEndpoint,
];

impl Known {
    /// The option `arg` names (`--` and its name), if [`read`] takes it.
    fn of(arg: &OsStr) -> Option<Known> {
        let id = arg.to_str()?.strip_prefix("--")?;
        if let Some(&option) = VALUED.iter().find(|o| o.identifier() == id) {
            return Some(Known::Valued(option));
        }
        if id == ConfigOption::DecisionLogNew.identifier() {
            return Some(Known::DecisionLogNew);
        }
        match id {
            "dry-run" => Some(Known::DryRun),
            "verbose" => Some(Known::Verbose),
            _ => None,
        }
    }
}

/// `argv` (`argv[0]` the program) read as `assay mcp wrap`, the session it runs; `None` when it
/// is not in the common form and clap must read it.
pub(crate) fn read(argv: &[OsString]) -> Option<WrapConfig> {
    let ([_, mcp, wrap], rest) = argv.split_first_chunk::<3>()?;
    if mcp != "mcp" || wrap != "wrap" {
        return None;
    }
    let mut config = wrap_config(Vec::new(), PathBuf::from(DEFAULT_POLICY));
    let mut seen: Vec<Known> = Vec::new();
    let mut i = 0;
    loop {
        let arg = rest.get(i)?;
        if arg == "--" {
            let command = rest.get(i + 1..)?;
            if command.is_empty() {
                return None;
            }
            // The command is text, as clap reads it.
            config.command = command
                .iter()
                .map(|a| a.to_str().map(OsString::from))
                .collect::<Option<_>>()?;
            return Some(config);
        }
        // `--name=value` carries its value (split at the first `=`, as clap splits it; an
        // argument that is not UTF-8 is taken whole, and no option has such a name).
        let (name, attached) = match arg.to_str().and_then(|a| a.split_once('=')) {
            Some((name, value)) => (OsStr::new(name), Some(OsStr::new(value))),
            None => (arg.as_os_str(), None),
        };
        let known = Known::of(name)?;
        if seen.contains(&known) {
            return None;
        }
        seen.push(known);
        let option = match (known, attached) {
            (Known::Valued(option), _) => option,
            // A flag takes no value.
            (_, Some(_)) => return None,
            (flag, None) => {
                *flag_of(&mut config, flag)? = true;
                i += 1;
                continue;
            }
        };
        let (value, taken) = match attached {
            Some(value) => (value, 1),
            None => (rest.get(i + 1)?.as_os_str(), 2),
        };
        if value.is_empty() || value.as_encoded_bytes().starts_with(b"-") {
            return None;
        }
        set(&mut config, option, value)?;
        i += taken;
    }
}

/// The field of `config` the flag `flag` sets; `None` for an option that takes a value.
fn flag_of(config: &mut WrapConfig, flag: Known) -> Option<&mut bool> {
    match flag {
        Known::DecisionLogNew => Some(&mut config.decision_log_new),
        Known::DryRun => Some(&mut config.dry_run),
        Known::Verbose => Some(&mut config.verbose),
        Known::Valued(_) => None,
    }
}

/// Sets `option` to `value`; `None` when clap would not take the value as it is (text that is
/// not UTF-8) or the option is not one [`read`] takes.
fn set(config: &mut WrapConfig, option: ConfigOption, value: &OsStr) -> Option<()> {
    let path = || Some(PathBuf::from(value));
    let text = || value.to_str().map(str::to_owned);
    match option {
        ConfigOption::Policy => config.policy = PathBuf::from(value),
        ConfigOption::EventSource => config.event_source = Some(text()?),
        ConfigOption::Label => config.label = Some(text()?),
        ConfigOption::DecisionLog => config.decision_log = path(),
        ConfigOption::SessionContextOut => config.session_context_out = path(),
        ConfigOption::SessionStopOut => config.session_stop_out = path(),
        ConfigOption::CoverageOut => config.coverage_out = path(),
        ConfigOption::CaptureDir => config.capture_dir = path(),
        ConfigOption::CaptureRoot => config.capture_root = path(),
        ConfigOption::SignKey => config.sign_key = path(),
        ConfigOption::OtlpEndpoint => config.otlp_endpoint = Some(text()?),
        _ => return None,
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use std::os::unix::ffi::OsStringExt;

    use proptest::prelude::*;

    use super::*;
    use crate::args::{Command, McpCommand, Parsed, parse};

    /// The session `argv` runs as clap reads it, when clap reads it as `mcp wrap`.
    fn clap_wrap(argv: &[OsString]) -> Option<WrapConfig> {
        match parse(argv.to_vec(), Parsed::Freed) {
            Ok(cli) => match cli.command {
                Command::Mcp(McpCommand::Wrap(w)) => Some(w.into()),
                _ => None,
            },
            Err(_) => None,
        }
    }

    fn os(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    /// Every option the reader takes as spelled, and whether it is a flag.
    fn names() -> Vec<(String, bool)> {
        let mut names: Vec<(String, bool)> = VALUED
            .iter()
            .map(|o| (format!("--{}", o.identifier()), false))
            .collect();
        for flag in ["--decision-log-new", "--dry-run", "--verbose"] {
            names.push((flag.to_string(), true));
        }
        names
    }

    /// Whatever [`read`] takes, clap takes, with every field the same.
    fn agrees(argv: &[OsString]) -> Result<bool, TestCaseError> {
        let Some(ours) = read(argv) else {
            return Ok(false);
        };
        let Some(theirs) = clap_wrap(argv) else {
            return Err(TestCaseError::fail(format!(
                "read {argv:?}, clap refuses it"
            )));
        };
        prop_assert_eq!(format!("{ours:?}"), format!("{theirs:?}"), "{:?}", argv);
        Ok(true)
    }

    #[test]
    fn the_forms_hosts_use_are_read_as_clap_reads_them() {
        for argv in [
            os(&["assay", "mcp", "wrap", "--policy", "p.yaml", "--", "server"]),
            os(&["assay", "mcp", "wrap", "--", "npx", "-y", "pkg", "--", "x"]),
            os(&[
                "assay",
                "mcp",
                "wrap",
                "--policy=p.yaml",
                "--label=a=b",
                "--",
                "s",
            ]),
            os(&[
                "assay",
                "mcp",
                "wrap",
                "--policy",
                "/etc/p.yaml",
                "--decision-log",
                "d.ndjson",
                "--decision-log-new",
                "--event-source",
                "assay://host/x",
                "--label",
                "fs",
                "--capture-root",
                "/var/caps",
                "--dry-run",
                "--verbose",
                "--",
                "uvx",
                "--from",
                "pkg",
                "server",
            ]),
        ] {
            assert!(agrees(&argv).unwrap(), "not read: {argv:?}");
        }
    }

    #[test]
    fn anything_else_is_left_to_clap() {
        for argv in [
            os(&["assay", "mcp", "wrap"]),
            os(&["assay", "mcp", "wrap", "--policy", "p.yaml", "server"]),
            os(&["assay", "mcp", "wrap", "--policy", "p.yaml", "--"]),
            os(&["assay", "mcp", "wrap", "--verbose=true", "--", "s"]),
            os(&["assay", "mcp", "wrap", "--policy=", "--", "s"]),
            os(&["assay", "mcp", "wrap", "--policy=-p", "--", "s"]),
            os(&[
                "assay",
                "mcp",
                "wrap",
                "--policy=a",
                "--policy",
                "b",
                "--",
                "s",
            ]),
            os(&["assay", "mcp", "wrap", "--policy", "-p", "--", "s"]),
            os(&["assay", "mcp", "wrap", "--policy", "", "--", "s"]),
            os(&[
                "assay", "mcp", "wrap", "--policy", "a", "--policy", "b", "--", "s",
            ]),
            os(&["assay", "mcp", "wrap", "--verbose", "--verbose", "--", "s"]),
            os(&["assay", "mcp", "wrap", "--idle-drain", "2", "--", "s"]),
            os(&["assay", "mcp", "wrap", "--help", "--", "s"]),
            os(&["assay", "mcp", "wrap", "-h", "--", "s"]),
            os(&["assay", "mcp", "pin", "--policy", "p", "--", "s"]),
            os(&["assay", "--version", "wrap", "--", "s"]),
        ] {
            assert!(read(&argv).is_none(), "read: {argv:?}");
        }
        let mut bad = os(&["assay", "mcp", "wrap", "--label", "x", "--", "s"]);
        bad[4] = OsString::from_vec(vec![0xff, b'x']);
        assert!(read(&bad).is_none());
        bad[4] = OsString::from("x");
        bad[6] = OsString::from_vec(vec![b's', 0xfe]);
        assert!(read(&bad).is_none());
    }

    /// An argument of a generated command line: options the reader knows and others, values
    /// good and bad, separators.
    fn token() -> impl Strategy<Value = OsString> {
        let mut words: Vec<String> = names().into_iter().map(|(name, _)| name).collect();
        words.extend(
            [
                "--",
                "--",
                "p.yaml",
                "assay://h/p",
                "",
                "-x",
                "-",
                "--bogus",
                "--policy=q.yaml",
                "--idle-drain",
                "--drain-timeout",
                "--max-line-bytes",
                "--server-stderr",
                "tee",
                "--forward-signals",
                "--no-forward-signals",
                "1.5",
                "-h",
                "--help",
                "--version",
                "wrap",
                "mcp",
                "a b",
                "é",
            ]
            .map(str::to_owned),
        );
        prop_oneof![
            8 => proptest::sample::select(words).prop_map(OsString::from),
            1 => proptest::collection::vec(any::<u8>().prop_filter("no NUL", |b| *b != 0), 0..4)
                .prop_map(OsString::from_vec),
        ]
    }

    /// A piece of a generated command line: mostly an option the reader knows with a good value
    /// (options repeat), else any token.
    fn unit() -> impl Strategy<Value = Vec<OsString>> {
        let option = (
            proptest::sample::select(names()),
            "[a-z=-]{0,4}",
            any::<bool>(),
        )
            .prop_map(|((name, flag), value, attach)| {
                if attach {
                    return vec![OsString::from(format!("{name}={value}"))];
                }
                let mut unit = vec![OsString::from(name)];
                if !flag {
                    unit.push(value.into());
                }
                unit
            });
        prop_oneof![
            4 => option,
            1 => token().prop_map(|t| vec![t]),
            1 => Just(vec![OsString::from("--"), OsString::from("server")]),
        ]
    }

    /// A well-formed command line: known options in any order, each once, then `--` and a
    /// command that may hold anything.
    fn well_formed() -> impl Strategy<Value = Vec<OsString>> {
        let all = names();
        let count = all.len();
        let options = proptest::sample::subsequence(all, 0..=count).prop_shuffle();
        let value =
            proptest::sample::select(vec!["p.yaml", "assay://h/p", "a b", "é", "x-", "a=b"]);
        let command = proptest::collection::vec(token(), 0..5);
        (
            options,
            proptest::collection::vec((value, any::<bool>()), 14),
            "[a-z]{1,8}",
            command,
        )
            .prop_map(|(options, values, server, command)| {
                let mut argv = os(&["assay", "mcp", "wrap"]);
                for (i, (name, flag)) in options.into_iter().enumerate() {
                    let (value, attach) = values[i];
                    if flag {
                        argv.push(name.into());
                    } else if attach {
                        argv.push(format!("{name}={value}").into());
                    } else {
                        argv.push(name.into());
                        argv.push(value.into());
                    }
                }
                argv.push("--".into());
                argv.push(server.into());
                argv.extend(command.into_iter().filter(|a| a.to_str().is_some()));
                argv
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn a_well_formed_line_is_read_as_clap_reads_it(argv in well_formed()) {
            prop_assert!(agrees(&argv)?, "not read: {:?}", argv);
        }

        #[test]
        fn whatever_is_read_clap_reads_the_same(
            head in proptest::sample::select(vec![
                vec!["assay", "mcp", "wrap"],
                vec!["assay", "mcp", "wrap"],
                vec!["assay", "mcp", "wrap"],
                vec!["assay", "mcp", "pin"],
                vec!["assay", "capture", "wrap"],
                vec!["assay", "wrap"],
            ]),
            units in proptest::collection::vec(unit(), 0..8),
            end in proptest::collection::vec(token(), 0..4),
        ) {
            let mut argv = os(&head);
            argv.extend(units.into_iter().flatten());
            argv.extend(end);
            agrees(&argv)?;
        }
    }
}
