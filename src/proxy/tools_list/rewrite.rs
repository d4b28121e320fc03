//! Passes two and three over a line with candidates: judge the tools of every well-formed
//! candidate (which stay, which go), then write the line with the removed tools left out and
//! every malformed candidate replaced by an error — streamed to the client output, so a
//! rewritten line costs no more memory than the line itself.

use std::io::{self, Write};

use super::candidates::{Candidates, put, tool_name, withheld_error};
use super::walk::{self, Hooks, MessageInfo};

/// The judged candidates of a line.
pub(crate) struct Judged {
    candidates: Candidates,
    /// One bit per tool of a well-formed candidate, in order: the tool stays.
    keep: Vec<u64>,
    /// Where pass two saw the tools arrays and the tools, so pass three can write the line
    /// without walking it again.
    plan: Plan,
}

/// Tools whose places pass two keeps for pass three, at most (24 bytes each: a few KiB
/// whatever the line holds); a line with more is walked again by pass three.
const PLANNED_TOOLS: usize = 256;

/// What pass two saw of the line's tools arrays, in the order of the walk (the hooks pass
/// three's walk would be given, with the same candidates).
#[derive(Default)]
struct Plan {
    /// Each `tools` array of a well-formed candidate: the candidate, the offsets of its `[` and
    /// of its `]` (`None` until seen).
    arrays: Vec<(usize, usize, Option<usize>)>,
    /// Each tool counted (the bits of `keep`), in order: its candidate and its byte range.
    tools: Vec<(usize, usize, usize)>,
    /// Not every tool's place was kept (too many, or an offset not in the line).
    incomplete: bool,
}

impl Judged {
    /// Whether writing the line would change it: a candidate loses tools or is malformed.
    pub(crate) fn changes_anything(&self) -> bool {
        self.candidates
            .list
            .iter()
            .any(|c| c.loses || c.problem.is_some())
    }

    /// Whether an answer is withheld because a tool of it has no digest (SPEC §5.1).
    pub(crate) fn withholds_undigestible(&self) -> bool {
        self.candidates
            .list
            .iter()
            .any(|c| c.problem == Some(super::walk::Malformed::Undigestible))
    }

    fn kept(&self, i: usize) -> bool {
        self.keep
            .get(i / 64)
            .is_some_and(|w| w & (1u64 << (i % 64)) != 0)
    }
}

/// What pass two decides of one tool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// The tool stays.
    Keep,
    /// The tool is removed from the answer.
    Drop,
    /// The whole answer is withheld (replaced by the error naming `Malformed`).
    Withhold(super::walk::Malformed),
}

/// Pass two's walk hooks: the verdict on every tool, and the plan of pass three.
struct Judge<F> {
    judged: Judged,
    keep: F,
    /// The line's first byte (offsets in the plan are from here).
    base: usize,
    cursor: usize,
    count: usize,
    /// The candidate whose tools are being judged, and the tool count at its first tool.
    current: Option<(usize, usize)>,
}

impl<F> Judge<F> {
    /// Forgets the bits of the tools counted from `from` on (pass three skips every tool
    /// of a withheld candidate, so its tools must not be counted).
    fn rewind(&mut self, from: usize) {
        self.count = from;
        self.judged.keep.truncate(from.div_ceil(64));
        if let Some(w) = self.judged.keep.last_mut() {
            if !from.is_multiple_of(64) {
                *w &= (1u64 << (from % 64)) - 1;
            }
        }
        // A withheld candidate: pass three walks the line (the plan is only for lines
        // without one).
        self.judged.plan.incomplete = true;
    }

    /// The well-formed candidate of the message starting at `message`.
    fn well_formed(&mut self, message: usize) -> Option<usize> {
        let c = self.judged.candidates.at(&mut self.cursor, message)?;
        let candidate = self.judged.candidates.list.get(c)?;
        candidate.problem.is_none().then_some(c)
    }

    /// Keeps the place of tool `text` of candidate `c` in the plan.
    fn plan_tool(&mut self, c: usize, text: &str) {
        let plan = &mut self.judged.plan;
        if plan.incomplete {
            return;
        }
        let start = (text.as_ptr() as usize).checked_sub(self.base);
        match start {
            Some(start) if plan.tools.len() < PLANNED_TOOLS => {
                plan.tools.push((c, start, start + text.len()));
            }
            _ => plan.incomplete = true,
        }
    }
}

impl<'a, F: FnMut(usize, &str, &str) -> Verdict> Hooks<'a> for Judge<F> {
    fn tools_open(&mut self, message: usize, at: usize) {
        if self.judged.plan.incomplete {
            return;
        }
        if let Some(c) = self.well_formed(message) {
            self.judged.plan.arrays.push((c, at, None));
        }
    }
    fn tool(&mut self, message: usize, text: &'a str, name: &'a str) {
        let Some(c) = self.well_formed(message) else {
            return;
        };
        let first = match self.current {
            Some((at, first)) if at == c => first,
            _ => {
                self.current = Some((c, self.count));
                self.count
            }
        };
        // The walk reports string names only, so the name always decodes.
        let name = tool_name(name).unwrap_or_default();
        let stays = match (self.keep)(c, &name, text) {
            Verdict::Keep => true,
            Verdict::Drop => false,
            Verdict::Withhold(why) => {
                if let Some(candidate) = self.judged.candidates.list.get_mut(c) {
                    candidate.problem = Some(why);
                }
                self.rewind(first);
                return;
            }
        };
        if let Some(candidate) = self.judged.candidates.list.get_mut(c) {
            candidate.loses |= !stays;
        }
        if self.count.is_multiple_of(64) {
            self.judged.keep.push(0);
        }
        if stays {
            if let Some(w) = self.judged.keep.last_mut() {
                *w |= 1u64 << (self.count % 64);
            }
        }
        self.count += 1;
        self.plan_tool(c, text);
    }
    fn tools_close(&mut self, message: usize, at: usize) {
        if self.judged.plan.incomplete {
            return;
        }
        if let Some(c) = self.well_formed(message) {
            match self.judged.plan.arrays.last_mut() {
                Some((open_c, _, close @ None)) if *open_c == c => *close = Some(at),
                _ => self.judged.plan.incomplete = true,
            }
        }
    }
}

/// Pass two: every tool of every well-formed candidate, through `keep(name, tool)` (the decoded
/// name and the tool object's text), which says whether it stays, goes, or takes the whole
/// answer with it. `plan`: keep the plan of pass three (a line that is not filtered is
/// rewritten only to be withheld, so it needs none).
pub(crate) fn judge(
    text: &str,
    candidates: Candidates,
    plan: bool,
    keep: impl FnMut(usize, &str, &str) -> Verdict,
) -> Judged {
    let mut j = Judge {
        judged: Judged {
            candidates,
            keep: Vec::new(),
            plan: Plan {
                incomplete: !plan,
                ..Plan::default()
            },
        },
        keep,
        base: text.as_ptr() as usize,
        cursor: 0,
        count: 0,
        current: None,
    };
    // The text passed the same walk in pass one.
    let _ = walk::walk(text, &mut j);
    j.judged
}

/// What replaces a server line.
pub(crate) enum Rewrite<'l> {
    /// The line with tools removed and malformed candidates replaced.
    Edit { text: &'l str, judged: Judged },
    /// A line that cannot be read: one error for each request it answered (the client's
    /// spelling of its id), written as they go (one, or a batch); none answered, one error with
    /// a `null` id.
    Replace {
        spellings: Vec<Box<str>>,
        batch: bool,
        why: String,
    },
}

impl<'l> Rewrite<'l> {
    pub(crate) fn edit(text: &'l str, judged: Judged) -> Self {
        Rewrite::Edit { text, judged }
    }

    pub(crate) fn replace(spellings: Vec<Box<str>>, batch: bool, why: String) -> Self {
        Rewrite::Replace {
            spellings,
            batch,
            why,
        }
    }

    /// A diagnostic line when something was withheld from the client (removing refused tools is
    /// the filter's normal work and says nothing).
    pub(crate) fn notice(&self) -> Option<String> {
        match self {
            Rewrite::Edit { judged, .. } => {
                let mut problems = judged.candidates.list.iter().filter_map(|c| c.problem);
                let first = problems.next()?;
                Some(format!(
                    "withheld {} answer(s) to tools/list that cannot be read as a tools/list result ({})",
                    1 + problems.count(),
                    first.text()
                ))
            }
            Rewrite::Replace { why, .. } => Some(format!(
                "withheld a server line that cannot be read strictly while tools/list answers are filtered ({why})"
            )),
        }
    }

    /// [`Rewrite::write_to`] with pass three walking the line whatever pass two planned: the
    /// oracle of the planned write.
    #[cfg(test)]
    pub(crate) fn write_walked(&self, w: &mut dyn Write) -> io::Result<()> {
        match self {
            Rewrite::Edit { text, judged, .. } => emit_walked(text, judged, w),
            Rewrite::Replace { .. } => self.write_to(w),
        }
    }

    /// Whether pass three writes this line from pass two's plan.
    #[cfg(test)]
    pub(crate) fn planned(&self) -> bool {
        match self {
            Rewrite::Edit { text, judged, .. } => spliced(text, judged, |_| ()).is_some(),
            Rewrite::Replace { .. } => false,
        }
    }

    /// Writes the replacement line(s), `\n` terminated.
    ///
    /// # Errors
    /// The first write error.
    pub(crate) fn write_to(&self, w: &mut dyn Write) -> io::Result<()> {
        match self {
            Rewrite::Edit { text, judged, .. } => emit(text, judged, w),
            Rewrite::Replace {
                spellings,
                batch,
                why,
            } => {
                let why = format!("server line withheld: {why}");
                match (spellings.as_slice(), batch) {
                    ([], _) => w.write_all(&withheld_error(None, "server line withheld"))?,
                    ([one], false) => w.write_all(&withheld_error(Some(one), &why))?,
                    (many, _) => {
                        w.write_all(b"[")?;
                        for (i, spelling) in many.iter().enumerate() {
                            if i > 0 {
                                w.write_all(b",")?;
                            }
                            w.write_all(&withheld_error(Some(spelling), &why))?;
                        }
                        w.write_all(b"]")?;
                    }
                }
                w.write_all(b"\n")
            }
        }
    }
}

/// Pass three: the line with removed tools left out (the remaining ones byte-exact, joined by
/// `,`), malformed candidates replaced by errors, everything else copied as it was. From pass
/// two's plan when it holds every tool and no candidate is malformed; else by walking the line.
fn emit(text: &str, judged: &Judged, w: &mut dyn Write) -> io::Result<()> {
    // Every piece is checked before the first is written.
    if spliced(text, judged, |_| ()).is_some() {
        let mut failed = None;
        let _ = spliced(text, judged, |part| put(w, part.as_bytes(), &mut failed));
        return failed.map_or(Ok(()), Err);
    }
    emit_walked(text, judged, w)
}

/// The pieces pass three writes, from pass two's plan, each given to `piece` in order: what
/// [`emit_walked`] writes, for a line whose candidates are all well-formed. `None` (and perhaps
/// some pieces given) when the plan cannot say: a malformed candidate, tools not planned, or
/// places that are not in the line in order.
fn spliced<'t>(text: &'t str, judged: &Judged, mut piece: impl FnMut(&'t str)) -> Option<()> {
    let plan = &judged.plan;
    if plan.incomplete || judged.candidates.list.iter().any(|c| c.problem.is_some()) {
        return None;
    }
    let mut copied = 0;
    let mut tools = plan.tools.iter().enumerate().peekable();
    for &(c, open, close) in &plan.arrays {
        let close = close?;
        let loses = judged.candidates.list.get(c)?.loses;
        if loses {
            piece(text.get(copied..open.checked_add(1)?)?);
        }
        let mut first = true;
        while let Some((i, &(_, start, end))) = tools.next_if(|(_, t)| t.0 == c) {
            if !(open < start && end <= close) {
                return None;
            }
            if loses && judged.kept(i) {
                if !first {
                    piece(",");
                }
                piece(text.get(start..end)?);
                first = false;
            }
        }
        if loses {
            copied = close;
        }
    }
    if tools.next().is_some() {
        return None;
    }
    piece(text.get(copied..)?);
    Some(())
}

/// Pass three by walking the line again (the hooks below).
fn emit_walked(text: &str, judged: &Judged, w: &mut dyn Write) -> io::Result<()> {
    let mut e = Emit {
        text,
        judged,
        w,
        failed: None,
        copied: 0,
        cursor: 0,
        tool: 0,
        rebuilding: false,
        first: true,
    };
    // The text passed the same walk in pass one.
    let _ = walk::walk(text, &mut e);
    e.copy_to(text.len());
    match e.failed {
        Some(err) => Err(err),
        None => Ok(()),
    }
}

/// Pass three's writer: a walk hook that copies the line to `w` as it goes.
struct Emit<'a, 'w> {
    text: &'a str,
    judged: &'a Judged,
    w: &'w mut dyn Write,
    failed: Option<io::Error>,
    /// Everything before this offset has been written (or left out).
    copied: usize,
    cursor: usize,
    /// Index of the next tool of a well-formed candidate.
    tool: usize,
    /// Inside a `tools` array being rebuilt; no tool written yet.
    rebuilding: bool,
    /// No tool of the array being rebuilt written yet.
    first: bool,
}

impl Emit<'_, '_> {
    /// Writes the text from where the copy stands up to `end`.
    fn copy_to(&mut self, end: usize) {
        if let Some(part) = self.text.get(self.copied..end) {
            put(self.w, part.as_bytes(), &mut self.failed);
        }
        self.copied = self.copied.max(end);
    }
}

impl<'a> Hooks<'a> for Emit<'a, '_> {
    fn tools_open(&mut self, message: usize, at: usize) {
        let c = self.judged.candidates.at(&mut self.cursor, message);
        let rebuild = c
            .and_then(|c| self.judged.candidates.list.get(c))
            .is_some_and(|c| c.problem.is_none() && c.loses);
        if rebuild {
            self.copy_to(at + 1);
            self.rebuilding = true;
            self.first = true;
        }
    }
    fn tool(&mut self, message: usize, text: &'a str, _name: &'a str) {
        let Some(c) = self.judged.candidates.at(&mut self.cursor, message) else {
            return;
        };
        if self
            .judged
            .candidates
            .list
            .get(c)
            .is_none_or(|c| c.problem.is_some())
        {
            return;
        }
        let i = self.tool;
        self.tool += 1;
        if self.rebuilding && self.judged.kept(i) {
            if !self.first {
                put(self.w, b",", &mut self.failed);
            }
            put(self.w, text.as_bytes(), &mut self.failed);
            self.first = false;
        }
    }
    fn tools_close(&mut self, _message: usize, at: usize) {
        if self.rebuilding {
            self.copied = at;
            self.rebuilding = false;
        }
    }
    fn message(&mut self, m: &MessageInfo<'a>) {
        let Some(c) = self.judged.candidates.at(&mut self.cursor, m.start) else {
            return;
        };
        let Some(candidate) = self.judged.candidates.list.get(c).copied() else {
            return;
        };
        let Some(problem) = candidate.problem else {
            return;
        };
        let spelling = match candidate.client {
            Some(i) => self.judged.candidates.spellings.get(i).map(|s| &**s),
            None => m.id,
        };
        self.copy_to(m.start);
        let error = withheld_error(
            spelling,
            &format!("tools/list result withheld: {}", problem.text()),
        );
        put(self.w, &error, &mut self.failed);
        self.copied = m.end;
    }
}
