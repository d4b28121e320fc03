//! What an unquoted (plain) YAML scalar means, read the way both families of YAML readers read
//! it, and whether they agree (SPEC §5: "for any policy we load, the rules equal what a standard
//! YAML reader (PyYAML `safe_load`) reads").
//!
//! YAML 1.2 readers (the core schema: Go yaml.v3, yq, saphyr, js-yaml 4) and YAML 1.1 readers
//! (PyYAML `safe_load`, Go yaml.v2, libyaml-based tools) resolve plain scalars differently:
//! `yes`, `on`, `010`, `0o10`, `1_000`, `1:30`, `2024-01-01`, `1e3`, `=` and `<<` mean one thing
//! to one family and another (or an error) to the other. A policy must mean one thing, so
//! [`resolve`] returns a value only when PyYAML's resolver and constructor (reproduced here
//! from PyYAML 6's `resolver.py` and `constructor.py`) and the YAML 1.2 core schema give the same
//! JSON value; anything else is refused and the author quotes the scalar. Quoted and block
//! scalars are strings to both families and never come here.
//!
//! Beyond PyYAML, `y`, `Y`, `n` and `N` are refused too: YAML 1.1's boolean type lists them and
//! Go's yaml.v2 reads them as booleans, while PyYAML and YAML 1.2 read strings.

use serde_json::{Number, Value};
use std::fmt;

mod patterns;

use patterns::{core_float, py_bool, py_float_pattern, py_int_pattern, py_timestamp};

/// What one reader makes of a plain scalar.
#[derive(Debug, Clone, PartialEq)]
enum Reading {
    Null,
    Bool(bool),
    Int(i128),
    /// An integer too large for 128 bits (both readers would hold it; JSON numbers cannot).
    HugeInt,
    Float(f64),
    Str,
    /// PyYAML only: a date or timestamp (`2024-01-01`).
    Timestamp,
    /// PyYAML only: the merge key `<<`.
    Merge,
    /// PyYAML only: the `=` value key.
    ValueKey,
    /// PyYAML only: a scalar its resolver types but its constructor cannot build (`0b_`).
    Broken,
}

impl fmt::Display for Reading {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reading::Null => f.write_str("null"),
            Reading::Bool(b) => write!(f, "the boolean {b}"),
            Reading::Int(i) => write!(f, "the integer {i}"),
            Reading::HugeInt => f.write_str("an integer"),
            Reading::Float(x) => write!(f, "the number {x:?}"),
            Reading::Str => f.write_str("a string"),
            Reading::Timestamp => f.write_str("a date"),
            Reading::Merge => f.write_str("a merge key"),
            Reading::ValueKey => f.write_str("a value key"),
            Reading::Broken => f.write_str("an error"),
        }
    }
}

/// Why a plain scalar cannot be used as it is.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Disagreement {
    /// The two reader families read it differently.
    Ambiguous {
        /// What YAML 1.1 readers (PyYAML) read.
        yaml11: String,
        /// What YAML 1.2 readers read.
        yaml12: String,
    },
    /// Both read a number JSON cannot hold exactly (`.inf`, `.nan`, an integer beyond 64 bits).
    NotJsonNumber,
}

/// `digits` in `radix` as an `i128`, `HugeInt` on overflow, `Broken` when empty or invalid.
fn int_of(digits: &str, radix: u32, negative: bool) -> Reading {
    if digits.is_empty() {
        return Reading::Broken;
    }
    let mut acc: i128 = 0;
    for c in digits.chars() {
        let Some(d) = c.to_digit(radix) else {
            return Reading::Broken;
        };
        acc = match acc
            .checked_mul(i128::from(radix))
            .and_then(|a| a.checked_add(i128::from(d)))
        {
            Some(a) => a,
            None => return Reading::HugeInt,
        };
    }
    Reading::Int(if negative { -acc } else { acc })
}

/// A sign prefix split off.
fn signed(s: &str) -> (bool, &str) {
    match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    }
}

/// PyYAML 6 `SafeLoader`: the implicit resolver (first character dispatch, registration
/// order: bool, float, int, merge, null, timestamp, value) and the safe constructor.
fn yaml11(s: &str) -> Reading {
    let first = s.chars().next();
    let candidates: &[u8] = match first {
        None => b"n",
        Some('y' | 'Y' | 't' | 'T' | 'f' | 'F' | 'o' | 'O') => b"b",
        Some('n' | 'N') => b"bn",
        Some('-' | '+') => b"fi",
        Some('0'..='9') => b"fis",
        Some('.') => b"f",
        Some('<') => b"m",
        Some('~') => b"n",
        Some('=') => b"v",
        Some(_) => b"",
    };
    for c in candidates {
        match c {
            b'b' if py_bool(s) => {
                return Reading::Bool(matches!(
                    s.to_ascii_lowercase().as_str(),
                    "yes" | "true" | "on"
                ));
            }
            b'f' if py_float_pattern(s) => return py_float(s),
            b'i' if py_int_pattern(s) => return py_int(s),
            b'm' if s == "<<" => return Reading::Merge,
            b'n' if matches!(s, "" | "~" | "null" | "Null" | "NULL") => return Reading::Null,
            b's' if py_timestamp(s) => return Reading::Timestamp,
            b'v' if s == "=" => return Reading::ValueKey,
            _ => {}
        }
    }
    Reading::Str
}

/// PyYAML's `construct_yaml_int`.
fn py_int(s: &str) -> Reading {
    let cleaned = s.replace('_', "");
    let (negative, v) = signed(&cleaned);
    if v == "0" {
        return Reading::Int(0);
    }
    if let Some(bin) = v.strip_prefix("0b") {
        return int_of(bin, 2, negative);
    }
    if let Some(hex) = v.strip_prefix("0x") {
        return int_of(hex, 16, negative);
    }
    if v.starts_with('0') {
        return int_of(v, 8, negative);
    }
    if v.contains(':') {
        // Base 60 (`1:30`): YAML 1.2 reads a string, so the value itself never matters.
        return Reading::Int(0);
    }
    int_of(v, 10, negative)
}

/// PyYAML's `construct_yaml_float`.
fn py_float(s: &str) -> Reading {
    let cleaned = s.replace('_', "").to_ascii_lowercase();
    let (negative, v) = signed(&cleaned);
    let x = match v {
        ".inf" => f64::INFINITY,
        ".nan" => f64::NAN,
        // Base 60 (`1:30.5`): YAML 1.2 reads a string.
        _ if v.contains(':') => 0.0,
        _ => match v.parse::<f64>() {
            Ok(x) => x,
            Err(_) => return Reading::Broken,
        },
    };
    Reading::Float(if negative { -x } else { x })
}

/// The YAML 1.2 core schema (YAML 1.2.2 §10.3.2).
fn yaml12(s: &str) -> Reading {
    match s {
        "" | "~" | "null" | "Null" | "NULL" => return Reading::Null,
        "true" | "True" | "TRUE" => return Reading::Bool(true),
        "false" | "False" | "FALSE" => return Reading::Bool(false),
        _ => {}
    }
    let (negative, body) = signed(s);
    if !body.is_empty() && body.bytes().all(|b| b.is_ascii_digit()) {
        return int_of(body, 10, negative);
    }
    if let Some(oct) = s.strip_prefix("0o") {
        if !oct.is_empty() && oct.bytes().all(|b| matches!(b, b'0'..=b'7')) {
            return int_of(oct, 8, false);
        }
    }
    if let Some(hex) = s.strip_prefix("0x") {
        if !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return int_of(hex, 16, false);
        }
    }
    if matches!(body, ".inf" | ".Inf" | ".INF") {
        return Reading::Float(if negative {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        });
    }
    if matches!(s, ".nan" | ".NaN" | ".NAN") {
        return Reading::Float(f64::NAN);
    }
    if core_float(s) {
        return match s.parse::<f64>() {
            Ok(x) => Reading::Float(x),
            Err(_) => Reading::Str,
        };
    }
    Reading::Str
}

/// Whether two readings are the same JSON value (floats by bits, so `-0.0` ≠ `0.0`; `NaN` is
/// refused later anyway).
fn same(a: &Reading, b: &Reading) -> bool {
    match (a, b) {
        (Reading::Float(x), Reading::Float(y)) => x.to_bits() == y.to_bits(),
        _ => a == b,
    }
}

/// The JSON value of the plain scalar `s`, when YAML 1.1 (PyYAML) and YAML 1.2 readers agree
/// on it and JSON can hold it.
///
/// # Errors
/// [`Disagreement::Ambiguous`] when the readers disagree (or when `s` is one of YAML 1.1's extra
/// booleans `y`/`n`), [`Disagreement::NotJsonNumber`] for `.inf`, `.nan` and integers beyond 64 bits.
pub(super) fn resolve(s: &str) -> Result<Value, Disagreement> {
    // The common case first: a name that starts with a letter no typed scalar starts with.
    match s.as_bytes().first() {
        Some(b'a'..=b'e' | b'g'..=b'm' | b'p'..=b's' | b'u'..=b'x' | b'z')
        | Some(b'A'..=b'E' | b'G'..=b'M' | b'P'..=b'S' | b'U'..=b'X' | b'Z')
        | Some(b'_' | b'/' | b'^' | b'$' | b'(' | b')' | b'\\' | b'*' | b'@' | b'`') => {
            return Ok(Value::String(s.to_owned()));
        }
        _ => {}
    }
    let old = yaml11(s);
    let new = yaml12(s);
    let ambiguous = || Disagreement::Ambiguous {
        yaml11: old.to_string(),
        yaml12: new.to_string(),
    };
    if matches!(s, "y" | "Y" | "n" | "N") {
        return Err(Disagreement::Ambiguous {
            yaml11: "the boolean (YAML 1.1's type; Go yaml.v2)".to_owned(),
            yaml12: new.to_string(),
        });
    }
    if !same(&old, &new) {
        return Err(ambiguous());
    }
    match new {
        Reading::Null => Ok(Value::Null),
        Reading::Bool(b) => Ok(Value::Bool(b)),
        Reading::Str => Ok(Value::String(s.to_owned())),
        Reading::Int(i) => {
            if let Ok(u) = u64::try_from(i) {
                Ok(Value::Number(u.into()))
            } else if let Ok(n) = i64::try_from(i) {
                Ok(Value::Number(n.into()))
            } else {
                Err(Disagreement::NotJsonNumber)
            }
        }
        Reading::Float(x) => Number::from_f64(x)
            .map(Value::Number)
            .ok_or(Disagreement::NotJsonNumber),
        Reading::HugeInt => Err(Disagreement::NotJsonNumber),
        Reading::Timestamp | Reading::Merge | Reading::ValueKey | Reading::Broken => {
            Err(ambiguous())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    use proptest::prelude::*;
    use regex::Regex;

    /// The patterns as written in PyYAML 6 `resolver.py` and YAML 1.2.2 §10.3.2: the oracle
    /// the hand-written matchers are held to.
    /// A matcher of ours.
    type Matcher = fn(&str) -> bool;

    const PATTERNS: [(&str, Matcher); 5] = [
        (
            r"^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$",
            py_bool,
        ),
        (
            r"^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
            py_float_pattern,
        ),
        (
            r"^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$",
            py_int_pattern,
        ),
        (
            r"^(?:[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]|[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?(?:[Tt]|[ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)$",
            py_timestamp,
        ),
        (
            r"^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$",
            core_float,
        ),
    ];

    static COMPILED: std::sync::LazyLock<Vec<Regex>> = std::sync::LazyLock::new(|| {
        PATTERNS
            .iter()
            .map(|(p, _)| Regex::new(p).unwrap())
            .collect()
    });

    fn agree_with_the_patterns(s: &str) {
        for ((pattern, matcher), re) in PATTERNS.iter().zip(COMPILED.iter()) {
            assert_eq!(matcher(s), re.is_match(s), "{s:?} against {pattern}");
        }
    }

    #[test]
    fn matchers_agree_with_the_patterns_on_known_scalars() {
        for s in [
            "",
            "0",
            "00",
            "0_",
            "-0",
            "+0",
            "0b",
            "0b1",
            "0b_",
            "-0b10",
            "0x",
            "0x_",
            "0xfF_",
            "0o7",
            "07",
            "08",
            "0_7",
            "1",
            "1_",
            "_1",
            "12",
            "1:2",
            "1:60",
            "1:59",
            "1:5:09",
            "1::2",
            "1:",
            "1:2.",
            "1:2.5",
            "-1:2.5_",
            "1:234",
            "0:30",
            "1.",
            "1.5",
            "1._",
            "1.5e+3",
            "1.5e3",
            "1.5E-10",
            "1e3",
            "1e+3",
            ".5",
            ".5e+1",
            ".5e1",
            "._",
            "._5",
            "-.5",
            "+.5",
            ".",
            "-.",
            ".inf",
            "-.Inf",
            "+.INF",
            ".iNf",
            ".nan",
            "-.nan",
            ".NaN",
            "yes",
            "YES",
            "yEs",
            "on",
            "OFF",
            "true",
            "tRue",
            "2024-01-01",
            "2024-1-1",
            "2024-01-01T",
            "2024-1-1t1:02:03",
            "2024-01-01 1:02:03",
            "2024-01-01 \t 10:02:03",
            "2024-01-01T10:02:03.",
            "2024-01-01T10:02:03.123",
            "2024-01-01T10:02:03Z",
            "2024-01-01T10:02:03 Z",
            "2024-01-01T10:02:03-5",
            "2024-01-01T10:02:03+05:00",
            "2024-01-01T10:02:03+05:0",
            "2024-01-01T10:02:03+055",
            "2024-01-01T100:02:03",
            "20240-01-01",
            "2024-001-01",
            "2024-01-01Z",
            "1.2.3",
            "1e",
            "1e+",
            "+",
            "-",
            "1_0.5",
            "9_9:59.9",
            "3049-6-12\t06:38:57.7\t",
            "2024-01-01T10:02:03 ",
            "0000-0-0t0:00:00\t",
        ] {
            agree_with_the_patterns(s);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 4096, .. ProptestConfig::default() })]

        /// Scalars over the alphabet every pattern uses, of every shape.
        #[test]
        fn matchers_agree_with_the_patterns(
            s in "[-+0-9_.:eEbxoaAfFZTt \tinINfnsyY]{0,14}",
        ) {
            agree_with_the_patterns(&s);
        }

        /// Shapes close to numbers, timestamps and base 60.
        #[test]
        fn matchers_agree_on_number_like_scalars(
            s in "[-+]?[0-9_]{0,5}([.:][0-9_]{0,3}){0,3}([eE][-+]?[0-9]{0,3})?",
            t in r"[0-9]{4}-[0-9]{1,3}-[0-9]{1,3}([Tt]|[ \t]{1,2})?[0-9]{0,3}(:[0-9]{1,3}){0,2}(\.[0-9]{0,2})?[ \t]?(Z|[-+][0-9]{1,3}(:[0-9]{1,3})?)?",
        ) {
            agree_with_the_patterns(&s);
            agree_with_the_patterns(&t);
        }
    }

    #[test]
    fn agreed_values() {
        for (s, v) in [
            ("exec", json!("exec")),
            ("read_file", json!("read_file")),
            ("", json!(null)),
            ("~", json!(null)),
            ("null", json!(null)),
            ("NULL", json!(null)),
            ("true", json!(true)),
            ("False", json!(false)),
            ("0", json!(0)),
            ("-0", json!(0)),
            ("+7", json!(7)),
            ("007", json!(7)),
            ("123", json!(123)),
            ("-5", json!(-5)),
            ("0x1F", json!(31)),
            ("1.5", json!(1.5)),
            (".5", json!(0.5)),
            ("1.", json!(1.0)),
            ("1.5e+3", json!(1500.0)),
            ("1.5E-3", json!(0.0015)),
            ("18446744073709551615", json!(18446744073709551615u64)),
            ("-9223372036854775808", json!(-9223372036854775808i64)),
            ("nope", json!("nope")),
            ("tRUE", json!("tRUE")),
            ("0X1F", json!("0X1F")),
            ("0b", json!("0b")),
            ("0x", json!("0x")),
            (".", json!(".")),
            ("-", json!("-")),
            ("+", json!("+")),
            ("1.2.3", json!("1.2.3")),
            ("v1", json!("v1")),
            ("^https://x/", json!("^https://x/")),
            ("<", json!("<")),
            ("<<<", json!("<<<")),
            ("==", json!("==")),
        ] {
            assert_eq!(resolve(s), Ok(v), "{s:?}");
        }
        // -0.0 keeps its sign, as PyYAML's float does.
        let v = resolve("-0.0");
        assert!(
            matches!(&v, Ok(Value::Number(n)) if n.as_f64().is_some_and(|x| x == 0.0 && x.is_sign_negative())),
            "{v:?}"
        );
    }

    #[test]
    fn readers_disagree() {
        for s in [
            "yes",
            "No",
            "ON",
            "off",
            "y",
            "Y",
            "n",
            "N",
            "010",
            "09",
            "0o17",
            "0b101",
            "1_000",
            "0x_1",
            "-0x1F",
            "+0x1F",
            "1:30",
            "1:30.5",
            "2024-01-01",
            "2001-12-14t21:59:43.10-05:00",
            "1e3",
            "1E+3",
            "1.5e3",
            "+.5",
            "-.5",
            "1_0.5",
            "<<",
            "=",
        ] {
            assert!(
                matches!(resolve(s), Err(Disagreement::Ambiguous { .. })),
                "{s:?}: {:?}",
                resolve(s)
            );
        }
    }

    #[test]
    fn not_json_numbers() {
        for s in [
            ".inf",
            "-.inf",
            "+.INF",
            ".nan",
            ".NaN",
            "18446744073709551616",
            "-9223372036854775809",
            "99999999999999999999999999999999999999999999",
        ] {
            assert_eq!(resolve(s), Err(Disagreement::NotJsonNumber), "{s:?}");
        }
    }

    #[test]
    fn messages_name_both_readings() {
        let Err(Disagreement::Ambiguous { yaml11, yaml12 }) = resolve("010") else {
            panic!("010 is ambiguous");
        };
        assert_eq!(yaml11, "the integer 8");
        assert_eq!(yaml12, "the integer 10");
        let Err(Disagreement::Ambiguous { yaml11, yaml12 }) = resolve("yes") else {
            panic!("yes is ambiguous");
        };
        assert_eq!(
            (yaml11.as_str(), yaml12.as_str()),
            ("the boolean true", "a string")
        );
    }
}
