//! A floor for the plain wrap's throughput (issue 50 item 4): the hash floor relay (`relay`) that
//! also does the least SPEC §4.1 asks of every `tools/call` line, done as cheaply as it can be —
//! the line read as JSON (serde_json's syntax check, borrowing `params.arguments`: no strict
//! duplicate-key or lenient-key checks, no policy), the SHA-256 of the arguments (raw, not even
//! canonicalized: `arguments_sha256` hashes their RFC 8785 form), and a log line as long as the
//! wrapper's decision line for these calls (705 bytes: the event's fields are SPEC §4.1's).
//! Anything that reads and logs calls the way the SPEC says costs at least this; its time over
//! the hash floor's is what those three things alone cost.
//!
//! Usage: spec-floor-relay LOGFILE -- COMMAND [ARGS...]

#[path = "../relay/mod.rs"]
#[allow(dead_code)]
mod relay;

use relay::OpensslSha256;

/// Reads each line and hashes its arguments.
struct ReadAndDigest;

impl relay::LineWork for ReadAndDigest {
    const RECORD: usize = 705;

    fn work(&mut self, line: &[u8]) -> u64 {
        relay::arguments_sha256(line).map_or(0, |d| u64::from(d[0]))
    }
}

fn main() -> std::io::Result<std::process::ExitCode> {
    relay::run_with(
        "spec-floor-relay",
        OpensslSha256(openssl::sha::Sha256::new()),
        ReadAndDigest,
    )
}
