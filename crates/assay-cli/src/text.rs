//! Text for people on a terminal: recorded strings made safe to print, and aligned tables.
//!
//! Everything `capture show` and `capture summary --format table` print from a capture was
//! written by someone else (a tool name, a label, a directory name under a root): it goes through
//! the library's one renderer ([`assay::text::render`]), which prints controls, format and
//! bidirectional-text characters escaped, `\u{1b}`, never raw.

/// `s` for people: the library's one renderer ([`assay::text::render`], SPEC §10).
pub(crate) fn clean(s: &str) -> String {
    assay::text::render(s)
}

/// [`clean`] of an optional value; `-` when absent.
pub(crate) fn or_dash(s: Option<&str>) -> String {
    s.map_or_else(|| "-".to_string(), clean)
}

/// Rows of cells printed in columns two spaces apart, each column as wide as its widest cell
/// (in characters); the last column is not padded.
pub(crate) struct Table {
    rows: Vec<Vec<String>>,
}

impl Table {
    pub(crate) fn new(header: &[&str]) -> Self {
        Self {
            rows: vec![header.iter().map(|h| (*h).to_string()).collect()],
        }
    }

    pub(crate) fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// The table as lines, each prefixed with `indent`.
    pub(crate) fn lines(&self, indent: &str) -> Vec<String> {
        let columns = self.rows.iter().map(Vec::len).max().unwrap_or(0);
        let widths: Vec<usize> = (0..columns)
            .map(|c| {
                self.rows
                    .iter()
                    .filter_map(|r| r.get(c))
                    .map(|cell| cell.chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        self.rows
            .iter()
            .map(|r| {
                let mut line = indent.to_string();
                for (c, cell) in r.iter().enumerate() {
                    if c + 1 == r.len() {
                        line.push_str(cell);
                    } else {
                        let pad = widths.get(c).copied().unwrap_or(0);
                        line.push_str(&format!("{cell:<pad$}  "));
                    }
                }
                line.trim_end().to_string()
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_and_bidi_are_escaped() {
        assert_eq!(clean("echo"), "echo");
        assert_eq!(clean("a\u{1b}[31mb"), "a\\u{1b}[31mb");
        assert_eq!(clean("x\ny"), "x\\u{a}y");
        assert_eq!(clean("\u{202e}txt"), "\\u{202e}txt");
        assert_eq!(clean("a\\u{1b}"), "a\\\\u{1b}");
        assert_eq!(clean("outil-é"), "outil-é");
    }

    #[test]
    fn columns_align() {
        let mut t = Table::new(&["A", "BB", "C"]);
        t.row(vec!["long".into(), "x".into(), "last".into()]);
        assert_eq!(t.lines(""), vec!["A     BB  C", "long  x   last"]);
    }
}
