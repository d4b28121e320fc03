//! Wrapper diagnostics: one line each, prefixed `assay:`, to the diagnostics sink — the process's
//! stderr, or for a capture the retained `proxy-stderr.log` shared with the child's stderr.
//! Never to the client output, which carries protocol only. Every line is rendered by
//! [`crate::text::render`], so it is one line whatever text it carries.
#![forbid(unsafe_code)]

use std::fs::File;
use std::io::Write;
use std::sync::Mutex;

pub(crate) struct Diag {
    sink: Mutex<Option<File>>,
    pub verbose: bool,
}

impl Diag {
    pub(crate) fn new(file: Option<File>, verbose: bool) -> Self {
        Self {
            sink: Mutex::new(file),
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
            match sink.as_mut() {
                Some(f) => {
                    let _ = f.write_all(line.as_bytes());
                }
                None => {
                    let _ = std::io::stderr().write_all(line.as_bytes());
                }
            }
        }
    }
}
