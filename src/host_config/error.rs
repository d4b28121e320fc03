//! Why a host configuration is not rewritten (a leaf: the scanner and the rewrite use it).

/// Why a host configuration is not rewritten. Nothing is written in any of these cases.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HostConfigError {
    /// The file is not strict JSON.
    #[error("line {line}, column {column}: {problem}")]
    Syntax {
        /// 1-based line.
        line: usize,
        /// 1-based column (in bytes).
        column: usize,
        /// What is wrong there.
        problem: String,
    },
    /// The JSON is well formed but not a host configuration this rewrite can handle.
    #[error("{0}")]
    Shape(String),
    /// `--server` named an entry the file does not have.
    #[error(
        "no server named {} (the file has: {}); give --server one of those",
        quoted_list(unknown),
        if known.is_empty() { "none".to_string() } else { escaped_list(known) }
    )]
    UnknownServer {
        /// The names given that no entry has.
        unknown: Vec<String>,
        /// The labels of the file's entries.
        known: Vec<String>,
    },
}

/// `"a", "b"` (each name escaped as Rust escapes a debug string: a name is peer text).
fn quoted_list(names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("\"{}\"", n.escape_debug()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `a, b`, each escaped as [`quoted_list`] does.
fn escaped_list(names: &[String]) -> String {
    names
        .iter()
        .map(|n| n.escape_debug().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}
