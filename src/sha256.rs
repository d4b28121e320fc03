//! The one SHA-256 of the crate and its lowercase hex (SPEC §4, §5, §7, §11).
//!
//! Every digest the wrapper writes (`policy_sha256`, `command_sha256`, `arguments_sha256`,
//! `decision_prefix_sha256`) and every digest the reader and the packager compute goes through
//! [`Sha256`] or [`digest`]. It is backed by `ring`'s assembly SHA-256, which picks at run time
//! the SHA extensions where the CPU has them and a vectorized (AVX or SSSE3) block function where
//! it does not; a pure-software SHA-256 is about twice as slow on CPUs without SHA extensions
//! (docs/decisions.md, "One SHA-256 for the crate").
#![forbid(unsafe_code)]

/// An incremental SHA-256. Cloning it snapshots the running state (the reader takes the digest
/// of the log's complete-line prefix that way while it hashes the whole file).
///
/// Nothing fed is nothing hashed: the digest of no bytes is the standard's constant
/// ([`EMPTY`]). The first hash of a process has `ring` choose its CPU instructions (half a
/// dozen `CPUID`s, ~7.5 µs each on a virtual machine); a session that ends with an empty
/// decision log does not pay for that (docs/decisions.md, "Start-up and shutdown without
/// sleeps").
#[derive(Clone)]
pub(crate) struct Sha256 {
    context: ring::digest::Context,
    fed: bool,
}

/// SHA-256 of no bytes (FIPS 180-4; a test holds it to `ring`'s).
const EMPTY: [u8; 32] = [
    0xe3, 0xb0, 0xc4, 0x42, 0x98, 0xfc, 0x1c, 0x14, 0x9a, 0xfb, 0xf4, 0xc8, 0x99, 0x6f, 0xb9, 0x24,
    0x27, 0xae, 0x41, 0xe4, 0x64, 0x9b, 0x93, 0x4c, 0xa4, 0x95, 0x99, 0x1b, 0x78, 0x52, 0xb8, 0x55,
];

impl Sha256 {
    /// A fresh context.
    pub(crate) fn new() -> Self {
        Self {
            context: ring::digest::Context::new(&ring::digest::SHA256),
            fed: false,
        }
    }

    /// Feeds `bytes`.
    pub(crate) fn update(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        self.fed = true;
        self.context.update(bytes);
    }

    /// The digest of everything fed.
    pub(crate) fn finalize(self) -> [u8; 32] {
        if !self.fed {
            return EMPTY;
        }
        let mut out = [0u8; 32];
        // A SHA-256 digest is always 32 bytes: the zip copies all of them.
        for (o, b) in out.iter_mut().zip(self.context.finish().as_ref()) {
            *o = *b;
        }
        out
    }

    /// The lowercase hex digest of everything fed.
    pub(crate) fn finalize_hex(self) -> String {
        hex(&self.finalize())
    }
}

/// Whether this CPU runs [`Sha256`] with its SHA instructions, as `ring` decides: SHA and SSSE3
/// on x86-64 (CPUID leaf 7 EBX bit 29), the SHA-2 extension on AArch64. About five times the
/// speed of the vector block functions, so hashing a line costs less than writing it; the
/// decision log's digest takes lines where they are then (`evidence::prefix_digest`). The
/// standard library asks the CPU once per process and keeps the answer.
pub(crate) fn accelerated() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("sha") && std::arch::is_x86_feature_detected!("ssse3")
    }
    #[cfg(target_arch = "aarch64")]
    {
        std::arch::is_aarch64_feature_detected!("sha2")
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        false
    }
}

/// The SHA-256 of `bytes`.
pub(crate) fn digest(bytes: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(bytes);
    h.finalize()
}

/// The lowercase hex SHA-256 of `bytes`.
pub(crate) fn digest_hex(bytes: &[u8]) -> String {
    hex(&digest(bytes))
}

/// Lowercase hex of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    let mut s = Vec::with_capacity(bytes.len() * 2);
    for &b in bytes {
        s.extend_from_slice(&HEX_PAIRS[usize::from(b)]);
    }
    // Only ASCII hex digits were pushed.
    String::from_utf8(s).unwrap_or_default()
}

/// The two lowercase hex digits of every byte value.
static HEX_PAIRS: [[u8; 2]; 256] = {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut t = [[0u8; 2]; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = [DIGITS[b >> 4], DIGITS[b & 0xf]];
        b += 1;
    }
    t
};

/// A SHA-256 held inline as its 32 bytes and their 64 lowercase hex digits (no allocation on
/// the per-line path): evidence writes the digits, the repeat counts of `limits.repeated_call`
/// key by the bytes, and neither is derived from the other on the per-call path. Nominally
/// `pub` (it appears in [`crate::policy::CallBudget::admit`]); only the crate can build one.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct HexDigest {
    hex: [u8; 64],
    raw: [u8; 32],
}

impl std::fmt::Debug for HexDigest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl HexDigest {
    /// The SHA-256 of `bytes`.
    pub(crate) fn of(bytes: &[u8]) -> Self {
        let raw = digest(bytes);
        let mut hex = [0u8; 64];
        for (pair, &b) in hex.chunks_exact_mut(2).zip(raw.iter()) {
            pair.copy_from_slice(&HEX_PAIRS[usize::from(b)]);
        }
        Self { hex, raw }
    }

    /// The 32 bytes of the digest.
    pub(crate) fn raw(&self) -> &[u8; 32] {
        &self.raw
    }

    /// The digest written as 64 lowercase hex digits (as evidence records it); `None` for
    /// any other text.
    pub(crate) fn from_hex(text: &str) -> Option<Self> {
        let digits: &[u8; 64] = text.as_bytes().try_into().ok()?;
        let nibble = |c: u8| match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            _ => None,
        };
        let mut raw = [0u8; 32];
        for (b, pair) in raw.iter_mut().zip(digits.chunks_exact(2)) {
            if let &[hi, lo] = pair {
                *b = (nibble(hi)? << 4) | nibble(lo)?;
            }
        }
        Some(Self { hex: *digits, raw })
    }

    /// The 64 hex digits as bytes.
    pub(crate) fn as_bytes(&self) -> &[u8; 64] {
        &self.hex
    }

    /// The 64 hex digits.
    pub(crate) fn as_str(&self) -> &str {
        // Only ASCII hex digits are ever stored.
        std::str::from_utf8(&self.hex).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_digest_of_nothing_is_rings() {
        let ring_empty = ring::digest::digest(&ring::digest::SHA256, b"");
        assert_eq!(EMPTY.as_slice(), ring_empty.as_ref());
        assert_eq!(Sha256::new().finalize(), EMPTY);
        let mut h = Sha256::new();
        h.update(b"");
        h.update(&[]);
        assert_eq!(h.finalize(), EMPTY);
        assert_eq!(
            digest_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        // Empty pieces among others change nothing.
        let mut h = Sha256::new();
        h.update(b"a");
        h.update(b"");
        h.update(b"bc");
        assert_eq!(h.finalize(), digest(b"abc"));
    }

    /// FIPS 180-4 / NIST CAVP examples.
    const VECTORS: &[(&[u8], &str)] = &[
        (
            b"",
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        ),
        (
            b"abc",
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
        ),
        (
            b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
        ),
        (
            b"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
            "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1",
        ),
    ];

    #[test]
    fn known_answers() {
        for (input, want) in VECTORS {
            assert_eq!(digest_hex(input), *want);
            assert_eq!(HexDigest::of(input).as_str(), *want);
            assert_eq!(*HexDigest::of(input).raw(), digest(input));
            let read = HexDigest::from_hex(want).unwrap();
            assert_eq!(read, HexDigest::of(input));
            assert_eq!(*read.raw(), digest(input));
            let mut h = Sha256::new();
            for b in *input {
                h.update(std::slice::from_ref(b));
            }
            assert_eq!(h.finalize_hex(), *want);
        }
        // One million 'a' (FIPS 180-2 appendix B.3), fed in pieces of every size up to 1000.
        let a = vec![b'a'; 1_000_000];
        let mut h = Sha256::new();
        let (mut at, mut step) = (0, 1);
        while at < a.len() {
            let end = (at + step).min(a.len());
            h.update(&a[at..end]);
            at = end;
            step = step % 1000 + 1;
        }
        assert_eq!(
            h.finalize_hex(),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"
        );
    }

    /// Against an independent implementation (RustCrypto's `sha2`), at every length across the
    /// block and padding boundaries, one-shot and split at every point; and a clone taken mid-way
    /// goes on independently of the original.
    #[test]
    fn same_as_an_independent_implementation() {
        use sha2::Digest as _;
        let data: Vec<u8> = (0..300u32).map(|i| (i * 151 + 7) as u8).collect();
        for len in 0..data.len() {
            let input = &data[..len];
            let want: [u8; 32] = sha2::Sha256::digest(input).into();
            assert_eq!(digest(input), want, "len {len}");
            for split in [0, 1, len / 3, len / 2, len.saturating_sub(1), len] {
                let (a, b) = input.split_at(split.min(len));
                let mut h = Sha256::new();
                h.update(a);
                let snapshot = h.clone();
                h.update(b);
                assert_eq!(h.finalize(), want, "len {len} split {split}");
                let head: [u8; 32] = sha2::Sha256::digest(a).into();
                assert_eq!(snapshot.finalize(), head, "len {len} split {split}");
            }
        }
    }

    #[test]
    fn hex_is_lowercase_pairs() {
        assert_eq!(hex(&[]), "");
        assert_eq!(hex(&[0x00, 0x0f, 0xa0, 0xff]), "000fa0ff");
        let all: Vec<u8> = (0..=255).collect();
        let h = hex(&all);
        for (i, pair) in h.as_bytes().chunks(2).enumerate() {
            assert_eq!(pair, format!("{i:02x}").as_bytes());
        }
    }
}
