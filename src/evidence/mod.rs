//! Evidence writers: the exclusive file opener, the CloudEvents envelope, the decision log with
//! its accounting, the answer events of SPEC §5.3 (`result_event`), and the session-context, session-stop, protocol, coverage and no-session
//! records.
#![forbid(unsafe_code)]

pub(crate) mod context;
pub(crate) mod coverage;
pub(crate) mod decision_log;
pub(crate) mod event;
pub(crate) mod file;
pub(crate) mod lazy_format;
pub(crate) mod no_session;
pub(crate) mod prefix_digest;
pub(crate) mod protocol;
pub(crate) mod result_event;
pub(crate) mod stop;
pub mod tool_definitions;
pub(crate) mod whole_lines;
