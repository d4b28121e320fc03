//! The OpenTelemetry mapping of a session (SPEC §10 export): trace and span ids derived from
//! the session (`ids`), the OTLP/JSON encoding of its spans (`encode`), and the live exporter
//! that sends them to an OTLP/HTTP endpoint while the session runs (`live`, over `http`).
#![forbid(unsafe_code)]

mod encode;
mod http;
mod ids;
mod live;

pub use encode::{Resource, SessionSpan, push_request};
pub(crate) use http::Endpoint;
pub(crate) use live::{LiveExporter, OwnedSession, Tap, start};
