//! The DSSE envelope of a signed capture (<https://github.com/secure-systems-lab/dsse>): its
//! pre-authentication encoding (PAE), the envelope as written, and the strict reading of one.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};

/// The envelope's `payloadType`: an in-toto Statement.
pub const PAYLOAD_TYPE: &str = "application/vnd.in-toto+json";

/// Deepest nesting of an envelope (it has three levels).
const MAX_ENVELOPE_DEPTH: usize = 8;

/// Most signatures read from one envelope.
const MAX_SIGNATURES: usize = 16;

/// DSSE v1 PAE: `"DSSEv1" SP LEN(type) SP type SP LEN(body) SP body`, lengths in ASCII decimal.
/// The signature is over these bytes, never over the payload alone.
pub(crate) fn pae(payload_type: &str, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + payload_type.len() + 32);
    out.extend_from_slice(
        format!(
            "DSSEv1 {} {payload_type} {} ",
            payload_type.len(),
            payload.len()
        )
        .as_bytes(),
    );
    out.extend_from_slice(payload);
    out
}

/// An envelope as written (and as read: unknown members are refused).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Envelope {
    /// Standard base64 (with padding) of the payload bytes.
    pub payload: String,
    #[serde(rename = "payloadType")]
    pub payload_type: String,
    pub signatures: Vec<Signature>,
}

/// One signature of an envelope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Signature {
    pub keyid: String,
    /// Standard base64 of the 64-byte Ed25519 signature.
    pub sig: String,
}

/// An envelope read and decoded: the payload bytes and each signature's key id and bytes.
pub(crate) struct Opened {
    pub payload: Vec<u8>,
    pub signatures: Vec<(String, Vec<u8>)>,
}

impl Envelope {
    /// The envelope of `payload` signed by `sign` under `keyid`.
    pub(crate) fn seal(payload: &[u8], keyid: &str, sign: impl FnOnce(&[u8]) -> Vec<u8>) -> Self {
        let sig = sign(&pae(PAYLOAD_TYPE, payload));
        Envelope {
            payload: STANDARD.encode(payload),
            payload_type: PAYLOAD_TYPE.to_string(),
            signatures: vec![Signature {
                keyid: keyid.to_string(),
                sig: STANDARD.encode(sig),
            }],
        }
    }

    /// Reads an envelope strictly: one JSON object (duplicate keys refused by the strict scanner
    /// after unescaping), exactly the DSSE members, `payloadType` the in-toto one, the payload
    /// and every signature standard base64, one to [`MAX_SIGNATURES`] signatures.
    pub(crate) fn open(bytes: &[u8]) -> Result<Opened, String> {
        crate::strict_json::scan(bytes, MAX_ENVELOPE_DEPTH)
            .map_err(|e| format!("not strict JSON: {e}"))?;
        let envelope: Envelope =
            serde_json::from_slice(bytes).map_err(|e| format!("not a DSSE envelope: {e}"))?;
        if envelope.payload_type != PAYLOAD_TYPE {
            return Err(format!(
                "payloadType is {:?}, not {PAYLOAD_TYPE:?}",
                crate::text::render(&envelope.payload_type)
            ));
        }
        if envelope.signatures.is_empty() || envelope.signatures.len() > MAX_SIGNATURES {
            return Err(format!(
                "holds {} signatures (1 to {MAX_SIGNATURES} are read)",
                envelope.signatures.len()
            ));
        }
        let payload = STANDARD
            .decode(&envelope.payload)
            .map_err(|e| format!("payload is not standard base64: {e}"))?;
        let signatures = envelope
            .signatures
            .into_iter()
            .map(|s| {
                let sig = STANDARD
                    .decode(&s.sig)
                    .map_err(|e| format!("a signature is not standard base64: {e}"))?;
                Ok((s.keyid, sig))
            })
            .collect::<Result<_, String>>()?;
        Ok(Opened {
            payload,
            signatures,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pae_is_the_dsse_v1_encoding() {
        // The DSSE specification's example (protocol.md, "Test case").
        assert_eq!(
            pae("http://example.com/HelloWorld", b"hello world"),
            b"DSSEv1 29 http://example.com/HelloWorld 11 hello world".to_vec()
        );
        assert_eq!(pae("", b""), b"DSSEv1 0  0 ".to_vec());
    }

    #[test]
    fn open_refuses_what_is_not_exactly_an_envelope() {
        let good = serde_json::to_vec(&Envelope::seal(b"{}", "k", |_| vec![1; 64])).unwrap();
        let opened = Envelope::open(&good).unwrap();
        assert_eq!(opened.payload, b"{}");
        assert_eq!(opened.signatures, vec![("k".to_string(), vec![1; 64])]);
        let text = String::from_utf8(good).unwrap();
        let bad = [
            // A duplicate key, spelled plainly or escaped.
            text.replacen('{', r#"{"payload":"e30=","#, 1),
            text.replacen('{', r#"{"\u0070ayload":"e30=","#, 1),
            text.replacen('{', r#"{"extra":1,"#, 1),
            text.replace("application/vnd.in-toto+json", "text/plain"),
            text.replace(
                r#""signatures":[{"keyid":"k","#,
                r#""signatures":[{"keyid":"k","x":1,"#,
            ),
            text.replace("e30=", "e30"),
            text.replace("e30=", "e3-="),
            r#"{"payload":"e30=","payloadType":"application/vnd.in-toto+json","signatures":[]}"#
                .to_string(),
            "[]".to_string(),
            String::new(),
        ];
        for b in bad {
            assert!(Envelope::open(b.as_bytes()).is_err(), "{b}");
        }
    }
}
