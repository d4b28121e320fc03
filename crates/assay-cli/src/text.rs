//! Text for people on a terminal: aligned tables, and `-` for an absent value.
//!
//! Every string someone else wrote that the command line prints (a tool name, a label, a
//! directory name under a root, an entry or command of a host configuration) goes through the
//! library's one renderer, [`assay::text::render`] (SPEC §10), called where the string is
//! printed; this module has no renderer of its own.

/// [`assay::text::render`] of an optional value; `-` when absent.
pub(crate) fn or_dash(s: Option<&str>) -> String {
    s.map_or_else(|| "-".to_string(), assay::text::render)
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
    fn an_absent_value_is_a_dash_and_a_present_one_is_rendered() {
        assert_eq!(or_dash(None), "-");
        assert_eq!(or_dash(Some("a\u{1b}[31mb")), "a\\u{1b}[31mb");
    }

    #[test]
    fn columns_align() {
        let mut t = Table::new(&["A", "BB", "C"]);
        t.row(vec!["long".into(), "x".into(), "last".into()]);
        assert_eq!(t.lines(""), vec!["A     BB  C", "long  x   last"]);
    }
}
