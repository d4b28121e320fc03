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
}
