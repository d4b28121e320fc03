//! Wrapper diagnostics: one line each, prefixed `assay:`, to the diagnostics sink — for a capture
//! the retained `proxy-stderr.log` shared with the child's stderr, otherwise the host's stderr
//! when it was checked to be one ([`crate::sys::fd::checked_stderr`], SPEC §3.1b), otherwise
//! nowhere. Never to the client output, which carries protocol only, and never to whatever
//! happens to be numbered 2 in a host that closed its standard descriptors.
//! Every line is rendered by [`crate::text::render`], so it is one line whatever text it carries.
#![forbid(unsafe_code)]

use std::fs::File;
use std::io::Write;
use std::sync::Mutex;

use crate::sys::fork_close::Tracked;

pub(crate) struct Diag {
    /// Not kept by a fork of the host (SPEC §3.1b).
    sink: Mutex<Option<Tracked<File>>>,
    pub verbose: bool,
}

impl Diag {
    /// Diagnostics to `file`; `None` drops them.
    pub(crate) fn new(file: Option<File>, verbose: bool) -> Self {
        Self {
            sink: Mutex::new(file.map(Tracked::new)),
            verbose,
        }
    }

    /// Writes `assay: <msg>\n` in one write; diagnostics are best effort. `msg` goes through
    /// the one renderer of text for people ([`crate::text::render`], SPEC §10): a tool name or
    /// other peer text in it cannot break the line or reach the terminal raw.
    pub(crate) fn say(&self, msg: &str) {
        let mut line = String::from("assay: ");
        crate::text::render_into(&mut line, msg);
        line.push('\n');
        if let Ok(mut sink) = self.sink.lock() {
            if let Some(f) = sink.as_mut() {
                let _ = f.write_all(line.as_bytes());
            }
        }
    }
}
