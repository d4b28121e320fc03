//! SHA-256 speed of the candidates for the crate's one SHA-256 (docs/decisions.md, "One SHA-256
//! for the crate"): `ring` (the one chosen), RustCrypto's `sha2` 0.11 and OpenSSL's libcrypto
//! (the hash floor's), on 8 MiB in one piece, on 8 MiB in 400-byte updates of one context (the
//! decision log's prefix digest) and on one-shot digests of 170 and 614 bytes (a call's
//! arguments, a decision line). Figures are MB/s or ns per digest of this thread's CPU time
//! (not wall time: the machines are shared), the best of `REPS` runs (default 20).
//!
//! Without SHA extensions: OpenSSL honours `OPENSSL_ia32cap=':~0x20000000'`; `sha2` takes
//! `RUSTFLAGS='--cfg sha2_backend="soft"'` (build it into another target directory); ring's CPU
//! detection has no switch, so `--ring-blocks` also times ring's block functions one by one
//! (SHA extensions, AVX, SSSE3, plain x86-64), called through their C symbols.
//!
//! Usage: sha256-speed [--ring-blocks]

use std::hint::black_box;

/// CPU time of this thread, in seconds.
fn cpu_now() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the clock id is a constant the kernel knows.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// The shortest CPU time of `reps` runs of `f`, in seconds.
fn best<F: FnMut()>(reps: usize, mut f: F) -> f64 {
    (0..reps)
        .map(|_| {
            let t = cpu_now();
            f();
            cpu_now() - t
        })
        .fold(f64::INFINITY, f64::min)
}

trait Candidate: Sized {
    const NAME: &'static str;
    fn new() -> Self;
    fn update(&mut self, b: &[u8]);
    fn finish(self) -> [u8; 32];
    fn digest(b: &[u8]) -> [u8; 32] {
        let mut h = Self::new();
        h.update(b);
        h.finish()
    }
}

struct Ring(ring::digest::Context);
impl Candidate for Ring {
    const NAME: &'static str = "ring 0.17 (digest::Context)";
    fn new() -> Self {
        Ring(ring::digest::Context::new(&ring::digest::SHA256))
    }
    fn update(&mut self, b: &[u8]) {
        self.0.update(b)
    }
    fn finish(self) -> [u8; 32] {
        let mut out = [0; 32];
        out.copy_from_slice(self.0.finish().as_ref());
        out
    }
}

struct Sha2(sha2::Sha256);
impl Candidate for Sha2 {
    const NAME: &'static str = "sha2 0.11";
    fn new() -> Self {
        use sha2::Digest;
        Sha2(sha2::Sha256::new())
    }
    fn update(&mut self, b: &[u8]) {
        use sha2::Digest;
        self.0.update(b)
    }
    fn finish(self) -> [u8; 32] {
        use sha2::Digest;
        self.0.finalize().into()
    }
}

struct Openssl(openssl::sha::Sha256);
impl Candidate for Openssl {
    const NAME: &'static str = "OpenSSL libcrypto (SHA256_Update)";
    fn new() -> Self {
        Openssl(openssl::sha::Sha256::new())
    }
    fn update(&mut self, b: &[u8]) {
        self.0.update(b)
    }
    fn finish(self) -> [u8; 32] {
        self.0.finish()
    }
}

fn row<C: Candidate>(big: &[u8], reps: usize) {
    let mb = big.len() as f64 / 1e6;
    let one = best(reps, || {
        black_box(C::digest(black_box(big)));
    });
    let inc = best(reps, || {
        let mut h = C::new();
        for c in big.chunks(400) {
            h.update(black_box(c));
        }
        black_box(h.finish());
    });
    let small = |len: usize| {
        let k = 20_000;
        let d = &big[..len];
        best(reps, || {
            for _ in 0..k {
                black_box(C::digest(black_box(d)));
            }
        }) / k as f64
            * 1e9
    };
    println!(
        "| {} | {:.0} | {:.0} | {:.0} ns | {:.0} ns |",
        C::NAME,
        mb / one,
        mb / inc,
        small(170),
        small(614)
    );
}

type BlockFn = unsafe extern "C" fn(*mut [u32; 8], *const u8, usize);

// ring's SHA-256 block functions (its pregenerated assembly), by their exported names.
unsafe extern "C" {
    fn ring_core_0_17_14__sha256_block_data_order_hw(s: *mut [u32; 8], d: *const u8, n: usize);
    fn ring_core_0_17_14__sha256_block_data_order_avx(s: *mut [u32; 8], d: *const u8, n: usize);
    fn ring_core_0_17_14__sha256_block_data_order_ssse3(s: *mut [u32; 8], d: *const u8, n: usize);
    fn ring_core_0_17_14__sha256_block_data_order_nohw(s: *mut [u32; 8], d: *const u8, n: usize);
}

fn has_flag(flag: &str) -> bool {
    std::fs::read_to_string("/proc/cpuinfo").is_ok_and(|s| {
        s.lines()
            .filter(|l| l.starts_with("flags"))
            .any(|l| l.split_whitespace().any(|f| f == flag))
    })
}

fn main() {
    let reps: usize = std::env::var("REPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    let big: Vec<u8> = (0..8usize << 20).map(|i| (i * 31 + i / 7) as u8).collect();
    let want = Sha2::digest(&big);
    assert_eq!(Ring::digest(&big), want, "ring");
    assert_eq!(Openssl::digest(&big), want, "openssl");
    println!(
        "CPU: {}; SHA extensions: {}; OPENSSL_ia32cap={:?}; best of {reps} runs, thread CPU time",
        std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|s| s
                .lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string()))
            .unwrap_or_default(),
        if has_flag("sha_ni") { "yes" } else { "no" },
        std::env::var("OPENSSL_ia32cap").unwrap_or_default()
    );
    println!(
        "| implementation | 8 MiB, MB/s | 8 MiB in 400-byte updates, MB/s | digest of 170 B | digest of 614 B |"
    );
    println!("|---|---|---|---|---|");
    row::<Ring>(&big, reps);
    row::<Sha2>(&big, reps);
    row::<Openssl>(&big, reps);
    if std::env::args().any(|a| a == "--ring-blocks") {
        let blocks = big.len() / 64;
        let mut fns: Vec<(&str, BlockFn)> = Vec::new();
        if has_flag("sha_ni") {
            fns.push((
                "SHA extensions",
                ring_core_0_17_14__sha256_block_data_order_hw,
            ));
        }
        if has_flag("avx") {
            fns.push(("AVX", ring_core_0_17_14__sha256_block_data_order_avx));
        }
        if has_flag("ssse3") {
            fns.push(("SSSE3", ring_core_0_17_14__sha256_block_data_order_ssse3));
        }
        fns.push(("x86-64", ring_core_0_17_14__sha256_block_data_order_nohw));
        for (name, f) in fns {
            let t = best(reps, || {
                let mut s = [
                    0x6a09e667u32,
                    0xbb67ae85,
                    0x3c6ef372,
                    0xa54ff53a,
                    0x510e527f,
                    0x9b05688c,
                    0x1f83d9ab,
                    0x5be0cd19,
                ];
                // SAFETY: the state is 8 words, `big` holds `blocks` whole 64-byte blocks, and
                // the function was only listed where the CPU has the features it uses.
                unsafe { f(&mut s, big.as_ptr(), blocks) };
                black_box(s);
            });
            println!(
                "ring block function, {name}: {:.0} MB/s (8 MiB)",
                big.len() as f64 / t / 1e6
            );
        }
    }
}
