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

use serde::Deserialize;
use serde_json::value::RawValue;

use relay::OpensslSha256;

#[derive(Deserialize)]
struct Message<'a> {
    #[serde(borrow)]
    params: Option<Params<'a>>,
}

#[derive(Deserialize)]
struct Params<'a> {
    #[serde(borrow)]
    arguments: Option<&'a RawValue>,
}

/// Reads each line and hashes its arguments.
struct ReadAndDigest;

impl relay::LineWork for ReadAndDigest {
    const RECORD: usize = 705;

    fn work(&mut self, line: &[u8]) -> u64 {
        let Ok(m) = serde_json::from_slice::<Message<'_>>(line) else {
            return 0;
        };
        let args = m.params.and_then(|p| p.arguments).map(RawValue::get);
        let digest = openssl::sha::sha256(args.unwrap_or("null").as_bytes());
        u64::from(digest[0])
    }
}

fn main() -> std::io::Result<std::process::ExitCode> {
    relay::run_with(
        "spec-floor-relay",
        OpensslSha256(openssl::sha::Sha256::new()),
        ReadAndDigest,
    )
}
