//! The `assay` command line: a thin consumer of the `assay` library.
fn main() {}
