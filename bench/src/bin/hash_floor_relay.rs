//! The SPEC §11 "hash floor": the floor relay that also keeps the SHA-256 of its log's prefix,
//! as `decision_prefix_sha256` requires, with OpenSSL's SHA-256 (libcrypto's `SHA256_Update`,
//! the assembly OpenSSL picks for the CPU: SHA extensions, else AVX2, AVX or SSSE3). Each log
//! line is hashed right after its `write(2)`; the digest is taken at the end.
//!
//! Usage: hash-floor-relay LOGFILE -- COMMAND [ARGS...]

#[path = "../relay/mod.rs"]
#[allow(dead_code)]
mod relay;

use relay::OpensslSha256;

fn main() -> std::io::Result<std::process::ExitCode> {
    relay::run(
        "hash-floor-relay",
        OpensslSha256(openssl::sha::Sha256::new()),
    )
}
