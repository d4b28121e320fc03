//! The five patterns of the two resolvers (PyYAML 6 `resolver.py`'s boolean, float, integer
//! and timestamp, the YAML 1.2 core schema's float), matched by hand: compiling them as regexes
//! cost a policy load about 1.5 ms (a third of the wrapper's start-up, SPEC §11). Each function
//! says the pattern it matches; the tests of [`super`] hold every one to that regex on generated
//! scalars.

/// A cursor over the bytes of a scalar.
struct Cur<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Cur<'a> {
    fn new(s: &'a str) -> Self {
        Self {
            b: s.as_bytes(),
            i: 0,
        }
    }
    fn done(&self) -> bool {
        self.i == self.b.len()
    }
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }
    /// Takes one byte if `f` accepts it.
    fn one(&mut self, f: impl Fn(u8) -> bool) -> bool {
        match self.peek() {
            Some(c) if f(c) => {
                self.i += 1;
                true
            }
            _ => false,
        }
    }
    /// Takes bytes while `f` accepts them; how many.
    fn many(&mut self, f: impl Fn(u8) -> bool) -> usize {
        let start = self.i;
        while self.one(&f) {}
        self.i - start
    }
    fn lit(&mut self, l: &str) -> bool {
        if self
            .b
            .get(self.i..)
            .is_some_and(|r| r.starts_with(l.as_bytes()))
        {
            self.i += l.len();
            true
        } else {
            false
        }
    }
    fn sign(&mut self) {
        self.one(|c| c == b'-' || c == b'+');
    }
}

fn digit(c: u8) -> bool {
    c.is_ascii_digit()
}
fn digit_(c: u8) -> bool {
    c.is_ascii_digit() || c == b'_'
}

/// `^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$`
pub(super) fn py_bool(s: &str) -> bool {
    matches!(
        s,
        "yes"
            | "Yes"
            | "YES"
            | "no"
            | "No"
            | "NO"
            | "true"
            | "True"
            | "TRUE"
            | "false"
            | "False"
            | "FALSE"
            | "on"
            | "On"
            | "ON"
            | "off"
            | "Off"
            | "OFF"
    )
}

/// `(?:[eE][-+][0-9]+)?` then the end.
fn py_exponent_end(c: &mut Cur<'_>) -> bool {
    if c.one(|b| b == b'e' || b == b'E')
        && (!c.one(|b| b == b'-' || b == b'+') || c.many(digit) == 0)
    {
        return false;
    }
    c.done()
}

/// `(?::[0-5]?[0-9])+` (at least one group). Each group is `:` and one or two digits, the first
/// of two at most 5.
fn sexagesimal_groups(c: &mut Cur<'_>) -> bool {
    let mut groups = 0;
    while c.lit(":") {
        let n = c.many(digit);
        if n == 0 || n > 2 || (n == 2 && c.b.get(c.i - 2).is_some_and(|&d| d > b'5')) {
            return false;
        }
        groups += 1;
    }
    groups > 0
}

/// `^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$`
pub(super) fn py_float_pattern(s: &str) -> bool {
    if matches!(s, ".nan" | ".NaN" | ".NAN") {
        return true;
    }
    if matches!(
        s.strip_prefix(['-', '+']).unwrap_or(s),
        ".inf" | ".Inf" | ".INF"
    ) {
        return true;
    }
    // `.5`: no sign before a leading dot.
    let mut c = Cur::new(s);
    if c.lit(".") {
        return c.one(digit) && {
            c.many(digit_);
            py_exponent_end(&mut c)
        };
    }
    let mut c = Cur::new(s);
    c.sign();
    if !c.one(digit) {
        return false;
    }
    // `[0-9_]*` is greedy but may give back nothing useful: `:` and `.` are not in it.
    c.many(digit_);
    if c.lit(".") {
        c.many(digit_);
        return py_exponent_end(&mut c);
    }
    // Base 60: the groups take digits only, so `[0-9_]*` above must not have eaten a group's
    // digits; it cannot, since a group starts with `:`.
    if !sexagesimal_groups(&mut c) || !c.lit(".") {
        return false;
    }
    c.many(digit_);
    c.done()
}

/// `^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$`
pub(super) fn py_int_pattern(s: &str) -> bool {
    let mut c = Cur::new(s);
    c.sign();
    let r = &s[c.i..];
    if let Some(bin) = r.strip_prefix("0b") {
        return !bin.is_empty() && bin.bytes().all(|b| matches!(b, b'0' | b'1' | b'_'));
    }
    if let Some(hex) = r.strip_prefix("0x") {
        return !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit() || b == b'_');
    }
    if let Some(oct) = r.strip_prefix('0') {
        return oct.bytes().all(|b| matches!(b, b'0'..=b'7' | b'_'));
    }
    if !c.one(|b| matches!(b, b'1'..=b'9')) {
        return false;
    }
    c.many(digit_);
    c.done() || (sexagesimal_groups(&mut c) && c.done())
}

/// `^(?:[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]|[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?(?:[Tt]|[ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)$`
pub(super) fn py_timestamp(s: &str) -> bool {
    let mut c = Cur::new(s);
    if c.many(digit) != 4 || !c.lit("-") {
        return false;
    }
    let month = c.many(digit);
    if !(1..=2).contains(&month) || !c.lit("-") {
        return false;
    }
    let day = c.many(digit);
    if !(1..=2).contains(&day) {
        return false;
    }
    if c.done() {
        // The date alone needs two-digit month and day.
        return month == 2 && day == 2;
    }
    let blanks = |b: u8| b == b' ' || b == b'\t';
    if !c.one(|b| b == b'T' || b == b't') && c.many(blanks) == 0 {
        return false;
    }
    let hour = c.many(digit);
    if !(1..=2).contains(&hour)
        || !c.lit(":")
        || c.many(digit) != 2
        || !c.lit(":")
        || c.many(digit) != 2
    {
        return false;
    }
    if c.lit(".") {
        c.many(digit);
    }
    if c.done() {
        return true;
    }
    // Blanks only before a zone.
    c.many(blanks);
    if c.lit("Z") {
        return c.done();
    }
    if !c.one(|b| b == b'-' || b == b'+') {
        return false;
    }
    let tz_hour = c.many(digit);
    if !(1..=2).contains(&tz_hour) {
        return false;
    }
    if c.lit(":") && c.many(digit) != 2 {
        return false;
    }
    c.done()
}

/// `^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$`
pub(super) fn core_float(s: &str) -> bool {
    let mut c = Cur::new(s);
    c.sign();
    if c.lit(".") {
        if c.many(digit) == 0 {
            return false;
        }
    } else {
        if c.many(digit) == 0 {
            return false;
        }
        if c.lit(".") {
            c.many(digit);
        }
    }
    if c.one(|b| b == b'e' || b == b'E') {
        c.sign();
        if c.many(digit) == 0 {
            return false;
        }
    }
    c.done()
}
