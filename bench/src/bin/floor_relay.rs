//! The SPEC §11 "floor": the least any logging stdio proxy can do (see `relay`).
//!
//! Usage: floor-relay LOGFILE -- COMMAND [ARGS...]

#[path = "../relay/mod.rs"]
#[allow(dead_code)]
mod relay;

/// The floor keeps no digest.
struct NoDigest;

impl relay::LogDigest for NoDigest {
    fn update(&mut self, _line: &[u8]) {}

    fn finish(self) -> Option<[u8; 32]> {
        None
    }
}

fn main() -> std::io::Result<std::process::ExitCode> {
    relay::run("floor-relay", NoDigest)
}
