//! The one HTTP request the live exporter makes: an OTLP/HTTP JSON export, `POST` over plain
//! HTTP/1.1 on a `TcpStream` with bounded connect, write and read times, `Connection: close`,
//! and only the status line of the answer read (docs/decisions.md "The live OTLP exporter":
//! why no HTTP crate, and why `http://` only — a local Collector or agent on the host is the
//! intended peer; TLS and authentication belong to that collector's exporters).

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

/// The path an endpoint without one is given (OTLP/HTTP's default for traces).
const TRACES_PATH: &str = "/v1/traces";
/// The most of the answer read: its status line.
const MAX_STATUS_LINE: usize = 1024;

/// Where spans are sent: a parsed `http://` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Endpoint {
    /// `host:port` as the `Host` header names it.
    host: String,
    port: u16,
    /// The request target: the URL's path and query, `/v1/traces` when it has no path.
    path: String,
}

impl Endpoint {
    /// Reads `url`: `http://HOST[:PORT][/PATH]`; without a path (or with `/` alone) the path is
    /// `/v1/traces`.
    ///
    /// # Errors
    /// What is wrong with it, in words for the option's error (SPEC §6).
    pub(crate) fn parse(url: &str) -> Result<Self, String> {
        let u = url::Url::parse(url).map_err(|e| {
            format!("{url:?} is not a URL ({e}); give one like http://127.0.0.1:4318")
        })?;
        if u.scheme() != "http" {
            return Err(format!(
                "{url:?}: only http:// is supported (send to a local OpenTelemetry Collector, \
                 which forwards over TLS)"
            ));
        }
        if !u.username().is_empty() || u.password().is_some() || u.fragment().is_some() {
            return Err(format!(
                "{url:?}: credentials and fragments are not supported in the endpoint"
            ));
        }
        let host = match u.host() {
            Some(url::Host::Domain(d)) => d.to_string(),
            Some(url::Host::Ipv4(a)) => a.to_string(),
            Some(url::Host::Ipv6(a)) => format!("[{a}]"),
            None => return Err(format!("{url:?} names no host")),
        };
        let port = u.port_or_known_default().unwrap_or(80);
        let path = match (u.path(), u.query()) {
            ("" | "/", None) => TRACES_PATH.to_string(),
            (p, None) => p.to_string(),
            (p, Some(q)) => format!("{p}?{q}"),
        };
        Ok(Self { host, port, path })
    }

    /// The endpoint as a URL, for messages.
    pub(crate) fn url(&self) -> String {
        format!("http://{}:{}{}", self.host, self.port, self.path)
    }

    fn addrs(&self) -> io::Result<Vec<SocketAddr>> {
        let host = self.host.trim_start_matches('[').trim_end_matches(']');
        Ok((host, self.port).to_socket_addrs()?.collect())
    }
}

/// Sends `body` (an `ExportTraceServiceRequest` in JSON) and returns the answer's HTTP status.
/// Connecting, writing and reading each take at most `timeout`.
///
/// # Errors
/// The I/O error of a failed connection, write or read, or `InvalidData` for an answer that is
/// not HTTP.
pub(crate) fn post(endpoint: &Endpoint, body: &[u8], timeout: Duration) -> io::Result<u16> {
    let mut last = io::Error::new(io::ErrorKind::NotFound, "the host resolved to no address");
    let mut stream = None;
    for addr in endpoint.addrs()? {
        match TcpStream::connect_timeout(&addr, timeout) {
            Ok(s) => {
                stream = Some(s);
                break;
            }
            Err(e) => last = e,
        }
    }
    let mut stream = stream.ok_or(last)?;
    stream.set_write_timeout(Some(timeout))?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_nodelay(true)?;
    let head = format!(
        "POST {} HTTP/1.1\r\nHost: {}:{}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nUser-Agent: assay/{}\r\nConnection: close\r\n\r\n",
        endpoint.path,
        endpoint.host,
        endpoint.port,
        body.len(),
        env!("CARGO_PKG_VERSION")
    );
    stream.write_all(head.as_bytes())?;
    stream.write_all(body)?;
    stream.flush()?;
    status(&mut stream)
}

/// The status code of the answer's status line (`HTTP/1.1 200 OK`).
fn status(stream: &mut impl Read) -> io::Result<u16> {
    let mut buf = Vec::with_capacity(128);
    let mut chunk = [0u8; 256];
    while !buf.contains(&b'\n') && buf.len() < MAX_STATUS_LINE {
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let line = buf.split(|&b| b == b'\n').next().unwrap_or_default();
    let bad = || io::Error::new(io::ErrorKind::InvalidData, "the answer is not HTTP/1.x");
    let text = std::str::from_utf8(line).map_err(|_| bad())?;
    let mut parts = text.split_ascii_whitespace();
    match (parts.next(), parts.next().map(str::parse::<u16>)) {
        (Some(v), Some(Ok(code))) if v.starts_with("HTTP/1.") => Ok(code),
        _ => Err(bad()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints() {
        let e = Endpoint::parse("http://127.0.0.1:4318").unwrap();
        assert_eq!(e.url(), "http://127.0.0.1:4318/v1/traces");
        let e = Endpoint::parse("http://collector/custom/path?x=1").unwrap();
        assert_eq!(e.url(), "http://collector:80/custom/path?x=1");
        let e = Endpoint::parse("http://[::1]:4318/").unwrap();
        assert_eq!(e.url(), "http://[::1]:4318/v1/traces");
        for bad in [
            "https://127.0.0.1:4318",
            "127.0.0.1:4318",
            "http://u:p@host/",
            "http://host/#f",
            "file:///tmp/x",
        ] {
            assert!(Endpoint::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn status_lines() {
        let read = |s: &[u8]| status(&mut &s[..]);
        assert_eq!(read(b"HTTP/1.1 200 OK\r\n\r\n{}").unwrap(), 200);
        assert_eq!(read(b"HTTP/1.0 429 Too Many\r\n").unwrap(), 429);
        assert!(read(b"SSH-2.0-OpenSSH\r\n").is_err());
        assert!(read(b"").is_err());
    }
}
