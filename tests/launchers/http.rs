//! server-everything's Streamable HTTP mode on a free loopback port, for `mcp-remote`.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::interop;

/// The running HTTP server; dropping it ends it.
pub(super) struct Everything {
    child: Child,
    port: u16,
}

impl Everything {
    /// Starts `node …/server-everything/dist/index.js streamableHttp` with `PORT` a port that
    /// was free a moment ago, and waits for its "listening on port" line (an event, not a
    /// sleep). A port taken in between makes the server exit: then another port is tried.
    pub(super) fn start() -> Everything {
        let index =
            interop().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
        let mut tried = Vec::new();
        for _ in 0..5 {
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .expect("a free loopback port")
                .port();
            let mut child = Command::new("node")
                .arg(&index)
                .arg("streamableHttp")
                .env("PORT", port.to_string())
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("start node (server-everything streamableHttp)");
            let stderr = child.stderr.take().unwrap();
            let (tx, rx) = mpsc::channel();
            // Reads every line to the end, so the server never blocks on a full pipe.
            std::thread::spawn(move || {
                for line in BufReader::new(stderr).lines() {
                    let Ok(line) = line else { break };
                    let _ = tx.send(line);
                }
            });
            let deadline = Instant::now() + Duration::from_secs(60);
            let mut seen = Vec::new();
            loop {
                match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                    Ok(line) if line.contains("listening on port") => {
                        return Everything { child, port };
                    }
                    Ok(line) => seen.push(line),
                    Err(_) => break,
                }
            }
            let _ = child.kill();
            let _ = child.wait();
            tried.push(format!("port {port}: {}", seen.join(" | ")));
        }
        panic!(
            "server-everything streamableHttp did not start:\n{}",
            tried.join("\n")
        );
    }

    pub(super) fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }
}

impl Drop for Everything {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
