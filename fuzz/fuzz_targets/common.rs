//! An independent reference for the fuzz targets: `serde_json` does the parsing (syntax, UTF-8,
//! escapes, lone surrogates, numbers that overflow a double), and this visitor adds what the
//! wrapper's strict scan refuses on top: duplicate keys (compared after unescaping, as Python's
//! `object_pairs_hook` sees them) and the nesting depth (the outermost container is level 1).

use std::collections::HashSet;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

/// What the reference parse found.
#[derive(Debug, Clone, Copy, Default)]
pub struct Info {
    pub depth: usize,
    pub duplicate_key: bool,
}

struct Seed;

impl<'de> DeserializeSeed<'de> for Seed {
    type Value = Info;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Info, D::Error> {
        d.deserialize_any(InfoVisitor)
    }
}

struct InfoVisitor;

impl<'de> Visitor<'de> for InfoVisitor {
    type Value = Info;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Info, E> {
        Ok(Info::default())
    }
    fn visit_i64<E>(self, _: i64) -> Result<Info, E> {
        Ok(Info::default())
    }
    fn visit_u64<E>(self, _: u64) -> Result<Info, E> {
        Ok(Info::default())
    }
    fn visit_f64<E>(self, _: f64) -> Result<Info, E> {
        Ok(Info::default())
    }
    fn visit_str<E>(self, _: &str) -> Result<Info, E> {
        Ok(Info::default())
    }
    fn visit_unit<E>(self) -> Result<Info, E> {
        Ok(Info::default())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Info, A::Error> {
        let mut out = Info {
            depth: 1,
            duplicate_key: false,
        };
        while let Some(inner) = seq.next_element_seed(Seed)? {
            out.depth = out.depth.max(inner.depth + 1);
            out.duplicate_key |= inner.duplicate_key;
        }
        Ok(out)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Info, A::Error> {
        let mut out = Info {
            depth: 1,
            duplicate_key: false,
        };
        let mut keys = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            out.duplicate_key |= !keys.insert(key);
            let inner = map.next_value_seed(Seed)?;
            out.depth = out.depth.max(inner.depth + 1);
            out.duplicate_key |= inner.duplicate_key;
        }
        Ok(out)
    }
}

/// `serde_json::Value` with every key taken literally. (`serde_json::Value`'s own `Deserialize`
/// treats the key `$serde_json::private::RawValue` specially when the `raw_value` feature is on,
/// as it is here through the wrapper's dependency; the fuzzer found that within minutes.)
pub fn literal_value(bytes: &[u8]) -> Option<serde_json::Value> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let v = ValueSeed.deserialize(&mut de).ok()?;
    de.end().ok()?;
    Some(v)
}

struct ValueSeed;

impl<'de> DeserializeSeed<'de> for ValueSeed {
    type Value = serde_json::Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(ValueVisitor)
    }
}

struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = serde_json::Value;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
        Ok(v.into())
    }
    fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
        Ok(v.into())
    }
    fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
        Ok(v.into())
    }
    fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
        Ok(v.into())
    }
    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(v.into())
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(serde_json::Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(ValueSeed)? {
            out.push(v);
        }
        Ok(out.into())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = serde_json::Map::new();
        while let Some(k) = map.next_key::<String>()? {
            let v = map.next_value_seed(ValueSeed)?;
            out.insert(k, v);
        }
        Ok(out.into())
    }
}

/// Parses `bytes` with `serde_json`; `None` when `serde_json` refuses it.
pub fn reference(bytes: &[u8]) -> Option<Info> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let info = Seed.deserialize(&mut de).ok()?;
    de.end().ok()?;
    Some(info)
}
