//! The `within` path constraint (SPEC §5): an argument must name a path inside one of the
//! policy's roots, judged lexically.
//!
//! The argument must be a string holding an absolute path (`/…`) or a `file://` URI with an
//! empty authority (`file:///…`, percent-decoded, no `?` or `#`). It is normalized without
//! touching the file system: repeated `/` and `.` segments are dropped, `..` removes the
//! previous segment, and a `..` above the root fails. It passes when the result equals a root or
//! lies under `root + "/"`. Relative paths, `~`, empty strings, backslashes (a path separator to
//! Windows servers), non-strings and any control character (U+0000–U+001F, U+007F), raw or
//! percent-decoded, fail: WHATWG URL parsers (Node's `new URL`) and Python's `urlsplit` silently
//! drop tab and newline, so `file:///workspace/.\t./etc/passwd` would name `/etc/passwd` to the
//! server. Symlinks on the server's side are out of
//! reach of a lexical check: a documented non-claim.

use std::borrow::Cow;

/// Why a root is not acceptable at load (the caller names the file and key).
pub(crate) fn root_problem(root: &str) -> Option<&'static str> {
    if !root.starts_with('/') {
        return Some("must be an absolute path (starting with /)");
    }
    if root.contains('\\') || has_control(root) {
        return Some("must not contain a backslash or a control character");
    }
    match normalize(root) {
        Some(n) if n == root => None,
        _ => Some("must be normalized (no //, . or .. segments, no trailing /)"),
    }
}

/// Whether `s` holds a control character (U+0000–U+001F or U+007F).
pub(crate) fn has_control(s: &str) -> bool {
    s.bytes().any(is_control)
}

fn is_control(b: u8) -> bool {
    b < 0x20 || b == 0x7f
}

/// Why `s` is refused for a control character (U+0000–U+001F, U+007F), raw or as a `%XX`
/// escape, or `None`: the one control-character rule of `within` and of resource URIs
/// (SPEC §5, §5.2). A `%` not followed by two hex digits is not an escape here.
pub(crate) fn control_problem(s: &str) -> Option<&'static str> {
    if has_control(s) {
        return Some("contains a control character");
    }
    let b = s.as_bytes();
    let encoded = memchr::memchr_iter(b'%', b).any(|i| {
        b.get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok())
            .is_some_and(is_control)
    });
    encoded.then_some("contains a control character (percent-encoded)")
}

/// Lexical normalization of an absolute path; `None` when a `..` climbs above the root.
fn normalize(path: &str) -> Option<String> {
    let mut parts: Vec<&str> = Vec::new();
    for seg in path.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            s => parts.push(s),
        }
    }
    let mut out = String::with_capacity(path.len());
    for p in &parts {
        out.push('/');
        out.push_str(p);
    }
    if out.is_empty() {
        out.push('/');
    }
    Some(out)
}

/// Decodes `%XX` escapes; `None` on a malformed escape or a result that is not UTF-8.
fn percent_decode(s: &str) -> Option<Cow<'_, str>> {
    if !s.contains('%') {
        return Some(Cow::Borrowed(s));
    }
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok().map(Cow::Owned)
}

/// What [`resolve_as`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Form {
    /// A value to judge: a `?` in a `file://` URI starts a query, which is refused.
    Value,
    /// A resource pattern (SPEC §5.2): `?` is a wildcard, kept in the path.
    Pattern,
}

/// The normalized absolute path an argument names, or why it names none.
pub(crate) fn resolve(value: &str) -> Result<String, &'static str> {
    resolve_as(value, Form::Value)
}

/// [`resolve`], also for resource patterns: the one normalization of `within` values, resource
/// URIs and resource patterns (SPEC §5, §5.2).
pub(crate) fn resolve_as(value: &str, form: Form) -> Result<String, &'static str> {
    if let Some(problem) = control_problem(value) {
        return Err(problem);
    }
    let path: Cow<'_, str> = if let Some(rest) = value.strip_prefix("file://") {
        if !rest.starts_with('/') {
            return Err("is a file URI without an empty authority (use file:///…)");
        }
        let query = form == Form::Value && rest.contains('?');
        if query || rest.contains('#') {
            return Err("is a file URI with a query or fragment");
        }
        percent_decode(rest).ok_or("is a file URI with a malformed percent escape")?
    } else {
        Cow::Borrowed(value)
    };
    if path.is_empty() {
        return Err("is empty");
    }
    if path.contains('\\') {
        return Err("contains a backslash");
    }
    if !path.starts_with('/') {
        return Err("is not an absolute path");
    }
    normalize(&path).ok_or("climbs above the file system root")
}

/// Whether the normalized `path` equals `root` or lies under `root/`.
pub(crate) fn inside(path: &str, root: &str) -> bool {
    root == "/"
        || path == root
        || (path.len() > root.len()
            && path.starts_with(root)
            && path.as_bytes().get(root.len()) == Some(&b'/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn within(value: &str, roots: &[&str]) -> bool {
        match resolve(value) {
            Ok(p) => roots.iter().any(|r| inside(&p, r)),
            Err(_) => false,
        }
    }

    #[test]
    fn inside_the_root_passes() {
        let r = ["/workspace"];
        for ok in [
            "/workspace",
            "/workspace/",
            "/workspace/a",
            "/workspace//a/./b",
            "/workspace/a/../b",
            "/workspace/a/..",
            "//workspace/a",
            "/./workspace/a",
            "file:///workspace/a",
            "file:///workspace/a%20b",
            "/workspace/..a",
            "/workspace/...",
        ] {
            assert!(within(ok, &r), "{ok}");
        }
    }

    #[test]
    fn traversal_and_lookalikes_fail() {
        let r = ["/workspace"];
        for bad in [
            "/workspace/../etc/passwd",
            "/workspace/a/../../etc/passwd",
            "/workspace/./../etc",
            "/workspacefoo",
            "/workspace-evil/x",
            "/works",
            "/",
            "/../workspace",
            "/workspace/../../../../workspace/x/../../..",
            "file:///workspace/%2e%2e/etc/passwd",
            "file:///workspace/%2E%2E%2Fetc",
            "file:///etc/passwd",
            "file://host/workspace/a",
            "file://workspace/a",
            "file:///workspace/a?/../../etc",
            "file:///workspace/a#x",
            "file:///workspace/%zz",
            "file:///workspace/%ff",
            "workspace/a",
            "./workspace/a",
            "~/workspace",
            "~",
            "",
            "/workspace/a\0",
            "/workspace\\..\\etc",
            "http:///workspace/a",
        ] {
            assert!(!within(bad, &r), "{bad:?}");
        }
    }

    /// SPEC §5: WHATWG URL parsers and Python's `urlsplit` drop tab and newline, so a control
    /// character anywhere, raw or percent-encoded, fails.
    #[test]
    fn control_characters_fail_raw_or_encoded() {
        let r = ["/workspace"];
        for c in (0u8..0x20).chain([0x7f]) {
            let ch = char::from(c);
            for bad in [
                format!("file:///workspace/.{ch}./etc/passwd"),
                format!("/workspace/.{ch}./etc/passwd"),
                format!("/workspace/a{ch}"),
                format!("{ch}/workspace/a"),
                format!("file:///workspace/a%{c:02x}"),
                format!("file:///workspace/.%{c:02X}./etc/passwd"),
            ] {
                assert!(!within(&bad, &r), "{bad:?}");
            }
            assert!(root_problem(&format!("/work{ch}space")).is_some());
        }
        // U+0080 and above are not control characters to this rule.
        assert!(within("/workspace/\u{85}", &r));
        assert!(within("file:///workspace/%C3%A9", &r));
    }

    #[test]
    fn several_roots_and_the_file_system_root() {
        let r = ["/workspace", "/tmp/scratch"];
        assert!(within("/tmp/scratch/x", &r));
        assert!(!within("/tmp/other", &r));
        assert!(within("/anything/at/all", &["/"]));
        assert!(!within("/..", &["/"]), "above the root fails even for /");
    }

    #[test]
    fn roots_must_be_absolute_and_normalized() {
        assert_eq!(root_problem("/workspace"), None);
        assert_eq!(root_problem("/"), None);
        assert_eq!(root_problem("/a/b c"), None);
        for bad in [
            "workspace",
            "",
            "~/w",
            "/workspace/",
            "/a//b",
            "/a/./b",
            "/a/../b",
            "/..",
            "/a\0",
            "/a\\b",
        ] {
            assert!(root_problem(bad).is_some(), "{bad:?}");
        }
    }
}
