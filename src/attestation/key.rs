//! The Ed25519 keys of signed captures: the private key a session signs with (`--sign-key`,
//! `sign_key`), the public keys `capture verify` checks with (`--pub`), their key id, and the key
//! pair `assay keygen` writes.
//!
//! Formats read (docs/evidence/attestation.md):
//! - a private key: PKCS#8 DER (v2 as `ring` and `assay keygen` write it, or v1 as OpenSSL
//!   writes it), the same in PEM (`-----BEGIN PRIVATE KEY-----`), or a raw 32-byte seed. The
//!   file must be a regular file its owner alone can read or write (mode 0600 or 0400).
//! - a public key: PEM SubjectPublicKeyInfo (`-----BEGIN PUBLIC KEY-----`, what `assay keygen`
//!   writes to `FILE.pub` and `openssl pkey -pubout` prints), the raw 32 bytes, or those bytes as
//!   64 hex digits (securesystemslib's `keyval.public`).
//!
//! The key id is the lowercase hex SHA-256 of the raw 32-byte public key.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use ring::signature::{ED25519, Ed25519KeyPair, KeyPair, UnparsedPublicKey};

use crate::input_file::{self, FinalLink};

/// Largest key file read (a PKCS#8 PEM of an Ed25519 key is about 170 bytes).
const MAX_KEY_FILE_BYTES: u64 = 4096;

/// The DER prefix of an Ed25519 SubjectPublicKeyInfo (RFC 8410 §4): the 32 key bytes follow.
const SPKI_PREFIX: [u8; 12] = [
    0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00,
];

const PEM_PRIVATE: &str = "PRIVATE KEY";
const PEM_PUBLIC: &str = "PUBLIC KEY";

/// Why a key could not be read or written. Every message names the file and what to do.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// The file could not be opened or read (missing, not a regular file, too large).
    #[error("cannot read key file {path}: {why}")]
    Read {
        /// The key file.
        path: PathBuf,
        /// What went wrong.
        why: String,
    },
    /// A private key file others may read or write.
    #[error(
        "signing key {path} has mode {mode:04o}: a private key must be readable by its owner only (chmod 600 {path})"
    )]
    Permissions {
        /// The key file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// The bytes are not a key of a format read here.
    #[error("{path} is not {what}: {why}")]
    Format {
        /// The key file.
        path: PathBuf,
        /// The kind of key expected.
        what: &'static str,
        /// What is wrong with it.
        why: &'static str,
    },
    /// A key file could not be created or written (`assay keygen`).
    #[error("cannot write key file {path}: {source} (key files are created new, never replaced)")]
    Write {
        /// The key file.
        path: PathBuf,
        /// The system's error.
        source: std::io::Error,
    },
    /// The system's random source failed (`assay keygen`).
    #[error("cannot generate a key: the system's random source failed")]
    Random,
}

/// A private Ed25519 key read from a file, with its key id.
pub struct SigningKey {
    pair: Ed25519KeyPair,
    keyid: String,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKey")
            .field("keyid", &self.keyid)
            .finish_non_exhaustive()
    }
}

impl SigningKey {
    /// Reads the private key at `path` (PKCS#8 DER or PEM, or a raw 32-byte seed) through the
    /// one file opener, refusing a file whose mode lets anyone but its owner read or write it.
    ///
    /// # Errors
    /// [`KeyError::Read`], [`KeyError::Permissions`] or [`KeyError::Format`].
    pub fn load(path: &Path) -> Result<Self, KeyError> {
        let read_error = |why: String| KeyError::Read {
            path: path.to_path_buf(),
            why,
        };
        let (file, size) = input_file::open_regular(path, FinalLink::Follow, MAX_KEY_FILE_BYTES)
            .map_err(|e| read_error(e.describe(MAX_KEY_FILE_BYTES)))?;
        let mode = file
            .metadata()
            .map_err(|e| read_error(e.to_string()))?
            .permissions()
            .mode()
            & 0o7777;
        if mode & 0o077 != 0 {
            return Err(KeyError::Permissions {
                path: path.to_path_buf(),
                mode,
            });
        }
        let bytes = input_file::read_opened(file, size, MAX_KEY_FILE_BYTES)
            .map_err(|e| read_error(e.describe(MAX_KEY_FILE_BYTES)))?;
        let format = |why| KeyError::Format {
            path: path.to_path_buf(),
            what: "an Ed25519 private key (PKCS#8 DER or PEM, or a raw 32-byte seed)",
            why,
        };
        let pair = if bytes.len() == 32 {
            Ed25519KeyPair::from_seed_unchecked(&bytes).map_err(|_| format("not a seed"))?
        } else {
            let der = match pem_body(&bytes, PEM_PRIVATE) {
                Some(der) => der.map_err(format)?,
                None => bytes,
            };
            Ed25519KeyPair::from_pkcs8_maybe_unchecked(&der)
                .map_err(|_| format("not a PKCS#8 Ed25519 private key"))?
        };
        Ok(Self::from_pair(pair))
    }

    fn from_pair(pair: Ed25519KeyPair) -> Self {
        let keyid = key_id(pair.public_key().as_ref());
        Self { pair, keyid }
    }

    /// The key id: lowercase hex SHA-256 of the raw 32-byte public key.
    pub fn keyid(&self) -> &str {
        &self.keyid
    }

    /// The public half.
    pub fn public_key(&self) -> PublicKey {
        let mut bytes = [0u8; 32];
        bytes.copy_from_slice(self.pair.public_key().as_ref());
        PublicKey::from_bytes(bytes)
    }

    /// The Ed25519 signature of `message`.
    pub(crate) fn sign(&self, message: &[u8]) -> Vec<u8> {
        self.pair.sign(message).as_ref().to_vec()
    }
}

/// A public Ed25519 key, with its key id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicKey {
    bytes: [u8; 32],
    keyid: String,
}

impl PublicKey {
    /// The key whose raw 32 bytes are `bytes`.
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        Self {
            keyid: key_id(&bytes),
            bytes,
        }
    }

    /// Reads a public key file: PEM SubjectPublicKeyInfo, the raw 32 bytes, or 64 hex digits.
    ///
    /// # Errors
    /// [`KeyError::Read`] or [`KeyError::Format`].
    pub fn load(path: &Path) -> Result<Self, KeyError> {
        let bytes =
            input_file::read_bounded(path, FinalLink::Follow, MAX_KEY_FILE_BYTES).map_err(|e| {
                KeyError::Read {
                    path: path.to_path_buf(),
                    why: e.describe(MAX_KEY_FILE_BYTES),
                }
            })?;
        let format = |why| KeyError::Format {
            path: path.to_path_buf(),
            what: "an Ed25519 public key (PEM SubjectPublicKeyInfo, the raw 32 bytes or 64 hex digits)",
            why,
        };
        let raw = match pem_body(&bytes, PEM_PUBLIC) {
            Some(der) => {
                let der = der.map_err(format)?;
                match der.strip_prefix(&SPKI_PREFIX[..]) {
                    Some(key) => key.to_vec(),
                    None => return Err(format("not an Ed25519 SubjectPublicKeyInfo")),
                }
            }
            None => hex_key(&bytes).unwrap_or(bytes),
        };
        let bytes: [u8; 32] = raw
            .as_slice()
            .try_into()
            .map_err(|_| format("an Ed25519 public key is 32 bytes"))?;
        Ok(Self::from_bytes(bytes))
    }

    /// The key id: lowercase hex SHA-256 of the raw 32-byte public key.
    pub fn keyid(&self) -> &str {
        &self.keyid
    }

    /// The raw 32 bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.bytes
    }

    /// The key as PEM SubjectPublicKeyInfo (what `assay keygen` writes to `FILE.pub`).
    pub fn to_pem(&self) -> String {
        let mut der = SPKI_PREFIX.to_vec();
        der.extend_from_slice(&self.bytes);
        format!(
            "-----BEGIN {PEM_PUBLIC}-----\n{}\n-----END {PEM_PUBLIC}-----\n",
            STANDARD.encode(der)
        )
    }

    /// Whether `signature` is this key's Ed25519 signature of `message`.
    pub(crate) fn verifies(&self, message: &[u8], signature: &[u8]) -> bool {
        UnparsedPublicKey::new(&ED25519, &self.bytes)
            .verify(message, signature)
            .is_ok()
    }
}

/// The 32 bytes of a key written as 64 hex digits (securesystemslib's `keyval.public`), with
/// surrounding whitespace; `None` for anything else.
fn hex_key(bytes: &[u8]) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(bytes).ok()?.trim();
    if text.len() != 64 {
        return None;
    }
    (0..64)
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Lowercase hex SHA-256 of a raw public key.
fn key_id(public: &[u8]) -> String {
    crate::sha256::digest_hex(public)
}

/// The DER inside a PEM block labelled `label`: `None` when `bytes` is not PEM at all, an error
/// when it is PEM of another label or not base64.
fn pem_body(bytes: &[u8], label: &str) -> Option<Result<Vec<u8>, &'static str>> {
    let text = std::str::from_utf8(bytes).ok()?;
    let text = text.trim();
    if !text.starts_with("-----BEGIN ") {
        return None;
    }
    let begin = format!("-----BEGIN {label}-----");
    let end = format!("-----END {label}-----");
    let Some(inner) = text
        .strip_prefix(begin.as_str())
        .and_then(|t| t.strip_suffix(end.as_str()))
    else {
        return Some(Err("a PEM block of another kind"));
    };
    let b64: String = inner.split_ascii_whitespace().collect();
    Some(
        STANDARD
            .decode(b64)
            .map_err(|_| "its PEM body is not base64"),
    )
}

/// The files [`generate_key_pair`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyPairFiles {
    /// The private key (PKCS#8 v2 DER, mode 0600).
    pub private: PathBuf,
    /// The public key (PEM SubjectPublicKeyInfo, mode 0644): the private key's path plus `.pub`.
    pub public: PathBuf,
    /// The key id.
    pub keyid: String,
}

/// Generates an Ed25519 key pair and writes the private key to `out` (PKCS#8 v2 DER, created
/// exclusively with mode 0600) and the public key to `out` + `.pub` (PEM, created exclusively,
/// mode 0644). Neither file is ever replaced; when the public key cannot be written, the private
/// key just written is removed again.
///
/// # Errors
/// [`KeyError::Random`] or [`KeyError::Write`] (a file that already exists included).
pub fn generate_key_pair(out: &Path) -> Result<KeyPairFiles, KeyError> {
    let rng = ring::rand::SystemRandom::new();
    let pkcs8 = Ed25519KeyPair::generate_pkcs8(&rng).map_err(|_| KeyError::Random)?;
    let pair = Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).map_err(|_| KeyError::Random)?;
    let key = SigningKey::from_pair(pair);
    let mut public_path = out.as_os_str().to_owned();
    public_path.push(".pub");
    let public_path = PathBuf::from(public_path);
    let write_error = |path: &Path| {
        let path = path.to_path_buf();
        move |source| KeyError::Write { path, source }
    };
    // Both names are checked first, so an existing public key leaves no private key behind.
    if std::fs::symlink_metadata(&public_path).is_ok() {
        return Err(write_error(&public_path)(std::io::Error::from(
            std::io::ErrorKind::AlreadyExists,
        )));
    }
    crate::evidence::file::create_new(out)
        .and_then(|mut f| f.write_all(pkcs8.as_ref()).and_then(|()| f.sync_all()))
        .map_err(write_error(out))?;
    let public = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&public_path)
        .and_then(|mut f| f.write_all(key.public_key().to_pem().as_bytes()));
    if let Err(e) = public {
        let _ = std::fs::remove_file(out);
        return Err(write_error(&public_path)(e));
    }
    Ok(KeyPairFiles {
        private: out.to_path_buf(),
        public: public_path,
        keyid: key.keyid,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn write_mode(path: &Path, bytes: &[u8], mode: u32) {
        std::fs::write(path, bytes).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn keygen_writes_a_pair_that_loads_and_signs() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("k");
        let files = generate_key_pair(&out).unwrap();
        assert_eq!(files.public, dir.path().join("k.pub"));
        let meta = std::fs::metadata(&out).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        let key = SigningKey::load(&out).unwrap();
        let public = PublicKey::load(&files.public).unwrap();
        assert_eq!(key.keyid(), files.keyid);
        assert_eq!(public.keyid(), files.keyid);
        assert_eq!(public.keyid(), crate::sha256::digest_hex(public.as_bytes()));
        let sig = key.sign(b"message");
        assert!(public.verifies(b"message", &sig));
        assert!(!public.verifies(b"messagE", &sig));
        // Never replaced: the private key, or the public key, already there.
        let again = generate_key_pair(&out).unwrap_err();
        assert!(again.to_string().contains("never replaced"), "{again}");
        let other = dir.path().join("o");
        std::fs::write(dir.path().join("o.pub"), b"x").unwrap();
        generate_key_pair(&other).unwrap_err();
        assert!(!other.exists());
    }

    #[test]
    fn private_key_formats_and_modes() {
        let dir = tempfile::tempdir().unwrap();
        // RFC 8032 §7.1 test 1: seed and public key.
        let seed = hex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60");
        let public = hex("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a");
        let raw = dir.path().join("raw");
        write_mode(&raw, &seed, 0o600);
        let key = SigningKey::load(&raw).unwrap();
        assert_eq!(key.public_key().as_bytes().as_slice(), public.as_slice());
        // PKCS#8 v1 (OpenSSL's form) in DER and in PEM.
        let mut v1 = hex("302e020100300506032b657004220420");
        v1.extend_from_slice(&seed);
        let der = dir.path().join("der");
        write_mode(&der, &v1, 0o400);
        assert_eq!(SigningKey::load(&der).unwrap().keyid(), key.keyid());
        let pem = dir.path().join("pem");
        let text = format!(
            "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
            STANDARD.encode(&v1)
        );
        write_mode(&pem, text.as_bytes(), 0o600);
        assert_eq!(SigningKey::load(&pem).unwrap().keyid(), key.keyid());
        // Modes others can use are refused, whatever the bytes.
        for mode in [0o640, 0o604, 0o644, 0o666, 0o602, 0o620] {
            std::fs::set_permissions(&raw, std::fs::Permissions::from_mode(mode)).unwrap();
            let e = SigningKey::load(&raw).unwrap_err();
            assert!(matches!(e, KeyError::Permissions { .. }), "{mode:o}: {e}");
            assert!(e.to_string().contains("chmod 600"), "{e}");
        }
        // Not a key.
        for bytes in [
            &b"short"[..],
            &[0u8; 31][..],
            &[0u8; 33][..],
            b"-----BEGIN PUBLIC KEY-----\nAA==\n-----END PUBLIC KEY-----\n",
        ] {
            write_mode(&raw, bytes, 0o600);
            assert!(matches!(
                SigningKey::load(&raw),
                Err(KeyError::Format { .. })
            ));
        }
        assert!(matches!(
            SigningKey::load(&dir.path().join("none")),
            Err(KeyError::Read { .. })
        ));
        assert!(matches!(
            SigningKey::load(dir.path()),
            Err(KeyError::Read { .. })
        ));
    }

    #[test]
    fn public_key_formats() {
        let dir = tempfile::tempdir().unwrap();
        let key = PublicKey::from_bytes([7u8; 32]);
        let pem = dir.path().join("pem");
        std::fs::write(&pem, key.to_pem()).unwrap();
        assert_eq!(PublicKey::load(&pem).unwrap(), key);
        let raw = dir.path().join("raw");
        std::fs::write(&raw, [7u8; 32]).unwrap();
        assert_eq!(PublicKey::load(&raw).unwrap(), key);
        std::fs::write(&raw, format!("{}\n", "07".repeat(32))).unwrap();
        assert_eq!(PublicKey::load(&raw).unwrap(), key);
        for bad in [
            &b"-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n"[..],
            b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
            b"-----BEGIN PUBLIC KEY-----\n!!\n-----END PUBLIC KEY-----\n",
            &[7u8; 31],
            b"0g0707070707070707070707070707070707070707070707070707070707070707",
            b"070707070707070707070707070707070707070707070707070707070707070",
        ] {
            std::fs::write(&raw, bad).unwrap();
            assert!(matches!(
                PublicKey::load(&raw),
                Err(KeyError::Format { .. })
            ));
        }
    }

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }
}
