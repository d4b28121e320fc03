//! Borrowed reading of a server line the strict client-line scan accepted (SPEC §3 item 6):
//! objects and arrays are read with `serde_json` into [`RawValue`]s that point into the line,
//! so judging a list costs no memory proportional to it. Keys are decoded (`"\u0075ri"` is
//! `uri`); only the members asked for are kept, every other value is skipped unread.
//!
//! The line passed [`crate::strict_json`] first (duplicate keys after lenient normalization,
//! lone surrogates, non-finite numbers and nesting deeper than
//! [`crate::proxy::message::CLIENT_MAX_DEPTH`] are refused there), so a member named here is the
//! only one of its name, and `serde_json`'s recursion limit is never reached.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

use crate::lenient;

/// The members of one object that a reading asked for.
#[derive(Debug)]
pub(super) struct Members<'a, const N: usize> {
    /// The raw value of each name asked for, in the order asked (decoded keys compared exactly).
    pub values: [Option<&'a RawValue>; N],
    /// A key is a lenient variant (`URI`, `Resources`) of a name of the `variants` asked about.
    pub variant: bool,
}

/// Reads `text` (one JSON value, surrounding whitespace allowed) as an object: the raw values
/// of the members `names`, and whether a key is a lenient variant of one of `variants` (not the
/// name itself). `None` when it is not an object.
pub(super) fn members<'a, const N: usize>(
    text: &'a str,
    names: [&str; N],
    variants: &[&str],
) -> Option<Members<'a, N>> {
    let mut de = serde_json::Deserializer::from_str(text);
    let members = de.deserialize_map(Pick { names, variants }).ok()?;
    de.end().ok()?;
    Some(members)
}

/// How a walk over the elements of an array ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Walked {
    /// Every element was handed over.
    Done,
    /// The callback asked to stop.
    Stopped,
    /// The text is not an array.
    NotArray,
}

/// Hands each element of the array `text` (one JSON value, surrounding whitespace allowed) to
/// `each`, in order, as a raw value borrowed from `text`, until `each` returns `false`.
pub(super) fn elements<'a>(text: &'a str, each: impl FnMut(&'a RawValue) -> bool) -> Walked {
    let mut walk = Walk {
        each,
        stopped: false,
    };
    let mut de = serde_json::Deserializer::from_str(text);
    let read = de.deserialize_seq(&mut walk).and_then(|()| de.end());
    match (read, walk.stopped) {
        (_, true) => Walked::Stopped,
        (Ok(()), false) => Walked::Done,
        (Err(_), false) => Walked::NotArray,
    }
}

/// Byte offset of `part` (a slice of `whole`) in `whole`.
pub(super) fn offset(whole: &str, part: &str) -> usize {
    (part.as_ptr() as usize).saturating_sub(whole.as_ptr() as usize)
}

/// The visitor of [`members`].
struct Pick<'n, const N: usize> {
    names: [&'n str; N],
    variants: &'n [&'n str],
}

impl<'de, const N: usize> Visitor<'de> for Pick<'_, N> {
    type Value = Members<'de, N>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = Members {
            values: [None; N],
            variant: false,
        };
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            out.variant |= self.variants.iter().any(|v| lenient::is_variant(&key, v));
            let slot = self
                .names
                .iter()
                .position(|n| *n == key)
                .and_then(|i| out.values.get_mut(i));
            match slot {
                Some(slot) => *slot = Some(map.next_value::<&'de RawValue>()?),
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(out)
    }
}

/// The visitor of [`elements`].
struct Walk<F> {
    each: F,
    stopped: bool,
}

impl<'de, F: FnMut(&'de RawValue) -> bool> Visitor<'de> for &mut Walk<F> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(element) = seq.next_element::<&'de RawValue>()? {
            if !(self.each)(element) {
                self.stopped = true;
                // Ends the reading: the rest of the array is not looked at.
                return Err(de::Error::custom("stopped"));
            }
        }
        Ok(())
    }
}

/// An object key, decoded: borrowed from the line when it holds no escape.
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(KeyVisitor)
    }
}

struct KeyVisitor;

impl<'de> Visitor<'de> for KeyVisitor {
    type Value = Key<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string key")
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
        Ok(Key(Cow::Borrowed(v)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'de>, E> {
        Ok(Key(Cow::Owned(v.to_owned())))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Key<'de>, E> {
        Ok(Key(Cow::Owned(v)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_are_borrowed_and_keys_decoded() {
        let text = r#" {"\u0075ri":"file:///a", "x":[1,{"uri":2}], "name" : {"k":1} } "#;
        let m = members(text, ["uri", "name", "none"], &["uri"]).unwrap();
        assert_eq!(m.values[0].unwrap().get(), r#""file:///a""#);
        assert_eq!(m.values[1].unwrap().get(), r#"{"k":1}"#);
        assert!(m.values[2].is_none());
        assert!(!m.variant, "an escaped exact key is the member itself");
        let name = m.values[1].unwrap().get();
        assert_eq!(&text[offset(text, name)..][..name.len()], name);
    }

    #[test]
    fn variants_are_seen_and_not_taken_for_the_member() {
        for (text, variant) in [
            (r#"{"URI":"x"}"#, true),
            (r#"{"Uri":"x"}"#, true),
            (r#"{"ur\u0130":"x"}"#, true),
            (r#"{"uri\u0000":"x"}"#, true),
            (r#"{"uri":"x"}"#, false),
            (r#"{"urn":"x"}"#, false),
        ] {
            let m = members(text, ["uri"], &["uri"]).unwrap();
            assert_eq!(m.variant, variant, "{text}");
            assert_eq!(
                m.values[0].is_some(),
                !variant && text.contains("uri\""),
                "{text}"
            );
        }
    }

    #[test]
    fn what_is_not_an_object_or_an_array_is_told() {
        for text in ["[]", "1", "\"a\"", "null", "true", "{} {}"] {
            assert!(members(text, ["a"], &[]).is_none(), "{text}");
        }
        for text in ["{}", "1", "\"[]\"", "[] []"] {
            assert_eq!(elements(text, |_| true), Walked::NotArray, "{text}");
        }
    }

    #[test]
    fn elements_are_handed_over_in_order_until_stopped() {
        let text = "[ 1 ,\t{\"a\" : [2]} , \"s\" ]\n";
        let mut seen = Vec::new();
        assert_eq!(
            elements(text, |e| {
                seen.push((offset(text, e.get()), e.get().to_owned()));
                true
            }),
            Walked::Done
        );
        assert_eq!(
            seen,
            [
                (2, "1".to_owned()),
                (6, r#"{"a" : [2]}"#.to_owned()),
                (20, r#""s""#.to_owned())
            ]
        );
        let mut n = 0;
        assert_eq!(
            elements(text, |_| {
                n += 1;
                n < 2
            }),
            Walked::Stopped
        );
        assert_eq!(n, 2);
        assert_eq!(elements("[]", |_| false), Walked::Done);
    }
}
