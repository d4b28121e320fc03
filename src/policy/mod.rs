//! Tool policy: loading (YAML or JSON) and evaluation in the order of SPEC §5.
