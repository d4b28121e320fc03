//! The one pass over a server line that every stage of the server→client path consumes: the
//! answer gate's glance at its keys (`answers`) and, when the policy governs `client_features`,
//! whether some reader could find a request in it (`client_features`). Both are read from the
//! same marks — the line's quotes and backslashes, and with requests in question its
//! `m`/`M` bytes and non-ASCII bytes — so no later stage scans the line again for what this
//! pass knows. Marks sit a few bytes apart in keys and far apart in text values: a short stretch
//! is searched byte by byte, a long one with `memchr2` or eight bytes at a time.
//!
//! Nothing here decides what reaches the client: an answer "unsure" (or not known) sends the
//! stage to its strict reading, as before this pass existed.

/// What a glance at a line's keys tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Glance {
    /// No key is a `result` or an `error`: no message of the line is a response.
    NoResponse,
    /// Exactly one id key and one answer key: a single response if its spelling is the common
    /// one.
    Single,
    /// The walk decides.
    Unsure,
}

/// What the one pass over a server line found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LineMarks {
    /// The answer gate's glance.
    pub glance: Glance,
    /// Whether some reader could find a request in the line: it holds the word `method` in any
    /// ASCII case, an escape or a non-ASCII byte (a lenient reader folds some characters into
    /// ASCII letters). `None`: not asked.
    pub may_hold_request: Option<bool>,
}

/// The word a request's method member is spelled with.
const WORD: &[u8] = b"method";

/// Reads `line` once: its glance, and with `requests` whether it may hold a request.
pub(crate) fn read(line: &[u8], requests: bool) -> LineMarks {
    let mut p = Pass {
        line,
        at: 0,
        requests,
        held: false,
    };
    let glance = p.glance();
    let may_hold_request = requests.then(|| p.look());
    LineMarks {
        glance,
        may_hold_request,
    }
}

/// The pass: the position after the last mark taken, and what was seen of requests.
struct Pass<'a> {
    line: &'a [u8],
    at: usize,
    /// Whether `m`/`M` and non-ASCII bytes are marks too (until a request word is found).
    requests: bool,
    /// A request word, an escape or a non-ASCII byte was seen.
    held: bool,
}

impl Pass<'_> {
    /// The next quote; `Err` at a backslash (a line with escapes is read by the walk). Marks on
    /// the way are noted.
    fn quote(&mut self) -> Result<Option<usize>, ()> {
        while let Some(at) = self.next_mark() {
            match self.line.get(at) {
                Some(b'"') => return Ok(Some(at)),
                Some(b'\\') => {
                    self.found();
                    return Err(());
                }
                _ => self.note(at),
            }
        }
        Ok(None)
    }

    /// Whether a request may be in the line: the marks the glance left (it stops early at a
    /// backslash or a control character in a key) are read to the end, or to the first that
    /// answers.
    fn look(&mut self) -> bool {
        while !self.held && self.requests {
            let Some(at) = self.next_mark() else {
                break;
            };
            self.note(at);
        }
        self.held
    }

    /// Notes what the mark at `at` tells of requests.
    fn note(&mut self, at: usize) {
        match self.line.get(at) {
            Some(b'"') => {}
            Some(b'm' | b'M') => {
                if self
                    .line
                    .get(at..at + WORD.len())
                    .is_some_and(|w| w.eq_ignore_ascii_case(WORD))
                {
                    self.found();
                }
            }
            _ => self.found(),
        }
    }

    /// Something a request reader needs was seen: `m` and non-ASCII bytes stop being marks.
    fn found(&mut self) {
        self.held = true;
        self.requests = false;
    }

    /// The position of the next mark from `at` on (and `at` moved past it). Marks sit a few
    /// bytes apart in a line's keys: a short stretch is searched byte by byte (a fresh
    /// vectorized search per mark costs more than the bytes it skips), a long one (a text value)
    /// with `memchr2` for quotes and backslashes, or eight bytes at a time with the requests'
    /// marks.
    fn next_mark(&mut self) -> Option<usize> {
        const SHORT: usize = 32;
        let table = if self.requests {
            &REQUEST_MARKS
        } else {
            &QUOTE_MARKS
        };
        let rest = self.line.get(self.at..)?;
        let head = rest.get(..SHORT).unwrap_or(rest);
        let found = match head.iter().position(|&b| table[usize::from(b)]) {
            Some(i) => Some(i),
            None => rest
                .get(SHORT..)
                .and_then(|long| self.long_search(long))
                .map(|i| SHORT + i),
        };
        match found {
            Some(offset) => Some(self.take(offset)),
            None => {
                self.at = self.line.len();
                None
            }
        }
    }

    /// The offset of the first mark in `long`.
    fn long_search(&self, long: &[u8]) -> Option<usize> {
        if !self.requests {
            return memchr::memchr2(b'"', b'\\', long);
        }
        let mut n = 0;
        while let Some(chunk) = long.get(n..).and_then(<[u8]>::first_chunk::<8>) {
            let flags = request_marks(u64::from_le_bytes(*chunk));
            if flags != 0 {
                return Some(n + (flags.trailing_zeros() / 8) as usize);
            }
            n += 8;
        }
        let tail = long.get(n..)?;
        tail.iter()
            .position(|&b| REQUEST_MARKS[usize::from(b)])
            .map(|i| n + i)
    }

    fn take(&mut self, offset: usize) -> usize {
        let at = self.at + offset;
        self.at = at + 1;
        at
    }

    /// Looks at the keys of a line without backslashes (see `answers`).
    fn glance(&mut self) -> Glance {
        let (mut ids, mut answers) = (0usize, 0usize);
        loop {
            let (open, close) = match (self.quote(), self.quote()) {
                (Err(()), _) | (_, Err(())) => return Glance::Unsure,
                (Ok(Some(open)), Ok(Some(close))) => (open, close),
                (Ok(None), _) => break,
                // An unterminated string: not a JSON text; the tolerant reading decides.
                (Ok(Some(_)), Ok(None)) => return Glance::Unsure,
            };
            if self.line.get(skip_ws(self.line, close + 1)) != Some(&b':') {
                continue;
            }
            // Lenient variants of `id`, `result` and `error` are at most a few bytes longer.
            let raw = self.line.get(open + 1..close).unwrap_or(&[]);
            if raw.len() > 16 {
                continue;
            }
            match key_kind(raw) {
                Some(Member::Id) => ids += 1,
                Some(Member::Answer) => answers += 1,
                Some(Member::Other) => {}
                None => return Glance::Unsure,
            }
        }
        // A response has a `result` or an `error` member: without one anywhere, nothing is.
        match (ids, answers) {
            (_, 0) => Glance::NoResponse,
            (1, 1) => Glance::Single,
            _ => Glance::Unsure,
        }
    }
}

/// The marks of the glance: `"` and `\\`.
static QUOTE_MARKS: [bool; 256] = {
    let mut t = [false; 256];
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t
};

/// The marks with requests in question: also `m`, `M` and every non-ASCII byte.
static REQUEST_MARKS: [bool; 256] = {
    let mut t = QUOTE_MARKS;
    t[b'm' as usize] = true;
    t[b'M' as usize] = true;
    let mut b = 0x80;
    while b < 0x100 {
        t[b] = true;
        b += 1;
    }
    t
};

/// [`REQUEST_MARKS`] of eight bytes read as one little-endian word: the high bit of each mark is
/// set, possibly along with bits of later bytes, so the lowest set bit always marks the first
/// mark (the "has zero byte" test: a borrow only carries upward from a byte that matched; a
/// non-ASCII byte is its own high bit).
#[inline]
fn request_marks(word: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero = |w: u64| w.wrapping_sub(ONES) & !w;
    (zero(word ^ (ONES * u64::from(b'"')))
        | zero(word ^ (ONES * u64::from(b'\\')))
        | zero((word | (ONES * 0x20)) ^ (ONES * u64::from(b'm')))
        | word)
        & HIGH
}

/// What a key (at most 16 bytes, no quote or backslash) is to the glance.
enum Member {
    Id,
    /// `result` or `error`.
    Answer,
    Other,
}

/// What the key `raw` is to the glance, by lenient class (`tools_list::walk::member`); `None`
/// for a key with a raw control character (a NUL that lenient normalization strips included: the
/// line is no JSON text a strict reader takes, and the tolerant reading decides) or that is not
/// UTF-8. A printable ASCII key (the common case, told in one look at its bytes) is a member only
/// as an ASCII case variant of the same length.
#[inline]
fn key_kind(raw: &[u8]) -> Option<Member> {
    if raw.iter().all(|&b| (0x20..0x80).contains(&b)) {
        return Some(Member::of(|name| raw.eq_ignore_ascii_case(name.as_bytes())));
    }
    // Not ASCII (or a control character, refused here).
    let key = std::str::from_utf8(raw)
        .ok()
        .filter(|k| !k.bytes().any(|b| b < 0x20))?;
    Some(Member::of(|name| {
        super::tools_list::walk::member(key, false, name).is_some()
    }))
}

impl Member {
    /// The member a key is, `is` telling whether it is the member of a name.
    #[inline]
    fn of(is: impl Fn(&str) -> bool) -> Self {
        if is("id") {
            Member::Id
        } else if is("result") || is("error") {
            Member::Answer
        } else {
            Member::Other
        }
    }
}

fn skip_ws(line: &[u8], mut at: usize) -> usize {
    while matches!(line.get(at), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        at += 1;
    }
    at
}

#[cfg(test)]
mod tests;
