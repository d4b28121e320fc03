"""Signed captures verified by third parties (SPEC §4.5): every capture signed by a real session
(`assay mcp wrap --sign-key`, `assay_stop.wrap_session(sign_key=...)`) verifies with
securesystemslib's DSSE ``Envelope`` and Ed25519 ``SSlibKey`` and carries an in-toto Statement
v1 that the in-toto-attestation package validates — without any of this project's code — and
with ``assay capture verify``. A tampered file, a swapped stop record, an added file, a removed
file, another key and an attestation copied from another capture each fail both verifiers."""
from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

import pytest
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat, load_pem_public_key
from google.protobuf import json_format
from in_toto_attestation.v1 import statement_pb2
from in_toto_attestation.v1.statement import Statement
from securesystemslib.dsse import Envelope
from securesystemslib.signer import SSlibKey

import assay_stop
from conftest import INIT, SOURCE, call, session_of

ATTESTATION = "attestation.dsse.json"
PREDICATE_TYPE = "https://assay-stop.dev/capture/v1"
SESSION = [INIT, call(2, "echo", '{"text":"a"}'), call(3, "exec", "{}")]


class NotVerified(Exception):
    """The third-party verifier refused the capture."""


def third_party_key(pub: Path) -> SSlibKey:
    """The PEM public key `assay keygen` wrote, as securesystemslib knows an Ed25519 key: its
    key id is the hex SHA-256 of the raw 32-byte key (the documented rule)."""
    raw = load_pem_public_key(pub.read_bytes()).public_bytes(Encoding.Raw, PublicFormat.Raw)
    return SSlibKey(hashlib.sha256(raw).hexdigest(), "ed25519", "ed25519", {"public": raw.hex()})


def third_party_verify(cap: Path, pub: Path) -> Dict[str, Any]:
    """Verifies a signed capture with securesystemslib and in-toto-attestation only, and checks
    every subject against the directory (no file missing, added or changed). Returns the
    predicate."""
    envelope = Envelope.from_dict(json.loads((cap / ATTESTATION).read_bytes()))
    if envelope.payload_type != "application/vnd.in-toto+json":
        raise NotVerified(f"payload type {envelope.payload_type}")
    try:
        envelope.verify([third_party_key(pub)], 1)
    except Exception as e:  # securesystemslib's VerificationError and friends
        raise NotVerified(f"signature: {e}") from e
    pb = json_format.Parse(envelope.payload, statement_pb2.Statement())  # type: ignore[attr-defined]
    statement = Statement.copy_from_pb(pb)
    statement.validate()
    if statement.pb.predicate_type != PREDICATE_TYPE:
        raise NotVerified(f"predicate type {statement.pb.predicate_type}")
    signed = {s.name: s.digest["sha256"] for s in statement.pb.subject}
    present = {p.name for p in cap.iterdir() if p.name not in (ATTESTATION, "manifest.json")}
    if present != set(signed):
        raise NotVerified(f"files {sorted(present)} are not the signed {sorted(signed)}")
    for name, digest in signed.items():
        if hashlib.sha256((cap / name).read_bytes()).hexdigest() != digest:
            raise NotVerified(f"{name} changed")
    predicate: Dict[str, Any] = json.loads(envelope.payload)["predicate"]
    return predicate


def cli_verify(assay_bin: Path, cap: Path, *pubs: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(assay_bin), "capture", "verify", str(cap), "--pub", *map(str, pubs)],
                          capture_output=True, text=True, timeout=60)


def keygen(assay_bin: Path, out: Path) -> Path:
    proc = subprocess.run([str(assay_bin), "keygen", "--out", str(out)], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    return Path(str(out) + ".pub")


def cli_session(assay_bin: Path, cap: Path, server: Path, policy: Path, key: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(assay_bin), "mcp", "wrap", "--policy", str(policy), "--event-source", SOURCE, "--capture-dir",
         str(cap), "--sign-key", str(key), "--", sys.executable, str(server)],
        input="\n".join(SESSION) + "\n", capture_output=True, text=True, timeout=60)


def py_session(root: Path, server: Path, policy: Path, **kwargs: Any) -> assay_stop.WrapOutcome:
    return session_of(SESSION, lambda stdin, stdout: assay_stop.wrap_session(
        [sys.executable, str(server)], policy=policy, event_source=SOURCE, stdin=stdin,
        stdout=stdout, **kwargs))


@pytest.fixture
def keys(tmp_path: Path, assay_bin: Path) -> Tuple[Path, Path, Path]:
    """A key pair (private, public) and the public key of another pair."""
    pub = keygen(assay_bin, tmp_path / "signing.key")
    other = keygen(assay_bin, tmp_path / "other.key")
    return tmp_path / "signing.key", pub, other


@pytest.fixture
def signed(tmp_path: Path, assay_bin: Path, demo_server: Path, demo_policy: Path,
           keys: Tuple[Path, Path, Path]) -> Tuple[Path, Path]:
    """Two captures of real sessions signed by the same key: (the capture, another capture)."""
    key = keys[0]
    caps = []
    for name in ("cap", "cap2"):
        proc = cli_session(assay_bin, tmp_path / name, demo_server, demo_policy, key)
        assert proc.returncode == 0, proc.stderr
        caps.append(tmp_path / name)
    return caps[0], caps[1]


def test_cli_and_python_signed_captures_verify_with_third_party_tools(
        tmp_path: Path, assay_bin: Path, demo_server: Path, demo_policy: Path,
        keys: Tuple[Path, Path, Path], signed: Tuple[Path, Path]) -> None:
    key, pub, _ = keys
    cap = signed[0]
    assert stat.S_IMODE((cap / ATTESTATION).stat().st_mode) == 0o600
    predicate = third_party_verify(cap, pub)
    verdict = assay_stop.read_capture(cap)
    assert predicate["session_id"] == verdict.session_id
    assert predicate["verdict"] == {"closure": "closed", "reasons": []}
    assert predicate["producer"] == {"name": "assay", "version": assay_stop.__version__}
    context = json.loads((cap / "session-context.json").read_bytes())
    assert predicate["policy_sha256"] == context["data"]["policy_sha256"]
    proc = cli_verify(assay_bin, cap, pub)
    assert proc.returncode == 0, proc.stderr
    assert "closure: closed" in proc.stdout
    # The attestation changes nothing the reader says: the verdict is that of the unsigned files.
    unsigned = tmp_path / "unsigned"
    shutil.copytree(cap, unsigned)
    (unsigned / ATTESTATION).unlink()
    assert assay_stop.read_capture(unsigned).to_dict() == verdict.to_dict()

    # The Python API, into a capture root.
    outcome = py_session(tmp_path / "root", demo_server, demo_policy, capture_root=tmp_path / "root",
                         sign_key=key)
    assert outcome.exit_code == 0 and outcome.signed is True, outcome.to_dict()
    keyid = third_party_key(pub).keyid
    assert outcome.signature == {"signed": True, "keyid": keyid, "error": None}
    assert outcome.to_dict()["signed"] is True
    run_dir = Path(outcome.capture_dir or "")
    assert outcome.paths["attestation"] == str(run_dir / ATTESTATION)
    assert third_party_verify(run_dir, pub)["session_id"] == outcome.session_id
    assert cli_verify(assay_bin, run_dir, pub).returncode == 0
    # Without a key nothing changes: no attestation, `signed` None.
    plain = py_session(tmp_path, demo_server, demo_policy, capture_dir=tmp_path / "plain")
    assert plain.signed is None and plain.signature is None and "attestation" not in plain.paths
    assert not (tmp_path / "plain" / ATTESTATION).exists()


def _tamper_byte(cap: Path, other: Path) -> None:
    log = cap / "decisions.ndjson"
    data = bytearray(log.read_bytes())
    data[10] ^= 0x01
    log.write_bytes(bytes(data))


def _swap_stop(cap: Path, other: Path) -> None:
    shutil.copyfile(other / "session-stop.json", cap / "session-stop.json")


def _add_file(cap: Path, other: Path) -> None:
    (cap / "notes.txt").write_text("added after signing\n")


def _remove_file(cap: Path, other: Path) -> None:
    (cap / "proxy-stderr.log").unlink()


def _replay(cap: Path, other: Path) -> None:
    shutil.copyfile(other / ATTESTATION, cap / ATTESTATION)


TAMPERINGS: Dict[str, Callable[[Path, Path], None]] = {
    "byte": _tamper_byte,
    "swapped-stop": _swap_stop,
    "added": _add_file,
    "removed": _remove_file,
    "replayed": _replay,
}


@pytest.mark.parametrize("kind", sorted(TAMPERINGS))
def test_every_tampering_fails_both_verifiers(kind: str, assay_bin: Path, keys: Tuple[Path, Path, Path],
                                              signed: Tuple[Path, Path]) -> None:
    _, pub, _ = keys
    cap, other = signed
    TAMPERINGS[kind](cap, other)
    with pytest.raises(NotVerified):
        third_party_verify(cap, pub)
    proc = cli_verify(assay_bin, cap, pub)
    assert proc.returncode == 4, (proc.stdout, proc.stderr)
    assert proc.stdout == ""
    assert "does not verify" in proc.stderr


def test_another_key_fails_both_verifiers(assay_bin: Path, keys: Tuple[Path, Path, Path],
                                          signed: Tuple[Path, Path]) -> None:
    _, pub, other_pub = keys
    cap = signed[0]
    with pytest.raises(NotVerified):
        third_party_verify(cap, other_pub)
    proc = cli_verify(assay_bin, cap, other_pub)
    assert proc.returncode == 4
    assert "none of the given public keys" in proc.stderr
    # One of several keys is enough.
    assert cli_verify(assay_bin, cap, other_pub, pub).returncode == 0


def test_a_forged_signature_under_the_right_key_id_fails_both(assay_bin: Path, keys: Tuple[Path, Path, Path],
                                                              signed: Tuple[Path, Path]) -> None:
    _, pub, _ = keys
    cap = signed[0]
    envelope = json.loads((cap / ATTESTATION).read_bytes())
    sig = bytearray(base64.b64decode(envelope["signatures"][0]["sig"]))
    sig[0] ^= 0x80
    envelope["signatures"][0]["sig"] = base64.b64encode(bytes(sig)).decode()
    (cap / ATTESTATION).write_text(json.dumps(envelope))
    with pytest.raises(NotVerified):
        third_party_verify(cap, pub)
    proc = cli_verify(assay_bin, cap, pub)
    assert proc.returncode == 4 and "does not verify" in proc.stderr


def test_a_package_keeps_the_attestation_and_verifies(tmp_path: Path, assay_bin: Path,
                                                      keys: Tuple[Path, Path, Path],
                                                      signed: Tuple[Path, Path]) -> None:
    _, pub, _ = keys
    cap = signed[0]
    manifest = assay_stop.package_capture(cap, tmp_path / "pkg")
    names = [f["name"] for f in manifest.to_dict()["files"]]
    assert ATTESTATION in names
    assert (tmp_path / "pkg" / ATTESTATION).read_bytes() == (cap / ATTESTATION).read_bytes()
    third_party_verify(tmp_path / "pkg", pub)
    assert cli_verify(assay_bin, tmp_path / "pkg", pub).returncode == 0


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660])
def test_keys_others_may_read_are_refused_before_anything_runs(
        tmp_path: Path, assay_bin: Path, demo_server: Path, demo_policy: Path,
        keys: Tuple[Path, Path, Path], mode: int) -> None:
    key = keys[0]
    os.chmod(key, mode)
    cap = tmp_path / "cap"
    proc = cli_session(assay_bin, cap, demo_server, demo_policy, key)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("assay: --sign-key: signing key ") and "chmod 600" in proc.stderr
    assert not cap.exists()
    with pytest.raises(assay_stop.ConfigError) as e:
        py_session(tmp_path, demo_server, demo_policy, capture_dir=cap, sign_key=key)
    assert str(e.value).startswith("sign_key: ")
    assert not cap.exists()


def test_a_key_needs_a_capture(tmp_path: Path, demo_server: Path, demo_policy: Path,
                               keys: Tuple[Path, Path, Path]) -> None:
    with pytest.raises(assay_stop.ConfigError, match="^sign_key: .*capture"):
        py_session(tmp_path, demo_server, demo_policy, sign_key=keys[0])
    with pytest.raises(assay_stop.ConfigError, match="^sign_key: "):
        py_session(tmp_path, demo_server, demo_policy, capture_dir=tmp_path / "c",
                   sign_key=tmp_path / "missing.key")
    assert not (tmp_path / "c").exists()


def _all_subjects(cap: Path) -> List[str]:
    envelope = json.loads((cap / ATTESTATION).read_bytes())
    statement = json.loads(base64.b64decode(envelope["payload"]))
    return [s["name"] for s in statement["subject"]]


def test_subjects_are_every_other_file(signed: Tuple[Path, Path]) -> None:
    cap = signed[0]
    assert _all_subjects(cap) == sorted(p.name for p in cap.iterdir() if p.name != ATTESTATION)


def test_a_signing_failure_is_recorded_and_leaves_the_verdict_closed(
        tmp_path: Path, demo_server: Path, demo_policy: Path, keys: Tuple[Path, Path, Path]) -> None:
    cap = tmp_path / "cap"
    squat = f"echo squatter > '{cap / ATTESTATION}' && exec '{sys.executable}' '{demo_server}'"
    outcome = session_of(SESSION, lambda stdin, stdout: assay_stop.wrap_session(
        ["sh", "-c", squat], policy=demo_policy, event_source=SOURCE, capture_dir=cap,
        sign_key=keys[0], stdin=stdin, stdout=stdout))
    assert outcome.signed is False and outcome.exit_code == 3, outcome.to_dict()
    assert outcome.signature is not None and outcome.signature["keyid"] == third_party_key(keys[1]).keyid
    error = outcome.signature["error"]
    assert error is not None and error.startswith("capture not signed: cannot write ") and "File exists" in error
    assert error in outcome.evidence_errors
    assert "attestation" not in outcome.paths
    assert (cap / ATTESTATION).read_bytes() == b"squatter\n"
    assert assay_stop.read_capture(cap).closure == "closed"
