"""assay_stop: an MCP stdio wrapper with a tool policy and checkable session evidence.

``wrap_session`` runs one MCP server as a child process between a client's descriptors and the
child, enforcing a tool policy on every ``tools/call`` and writing the requested evidence.
``read_capture`` judges a capture directory ``closed``, ``incomplete`` or ``unknown``, and
``read_captures`` every capture under a capture root;
``package_capture`` copies one with a manifest of digests. ``list_tools`` lists a live server's
tools as an MCP client would, with each tool's definition digest (tool pinning, SPEC §5.1). See ``_native.pyi`` for the full
documentation of every class and function.

The GIL is released while a session runs, so other Python threads keep running. Ctrl-C
(``KeyboardInterrupt``) takes effect only when ``wrap_session`` returns, which happens when the
client closes its input: run a session in a thread, or close the input descriptor, to stop it.
"""
from __future__ import annotations

import os
from typing import Iterable, List, Optional, Protocol, Union

from assay_stop._native import (
    Closure,
    ConfigError,
    ListedTool,
    PackageManifest,
    Reason,
    StopWriteError,
    ToolListing,
    WrapError,
    WrapOutcome,
    __version__,
)
from assay_stop import _native

__all__ = [
    "Closure",
    "ConfigError",
    "ListedTool",
    "PackageManifest",
    "Reason",
    "StopWriteError",
    "ToolListing",
    "WrapError",
    "WrapOutcome",
    "__version__",
    "list_tools",
    "package_capture",
    "read_capture",
    "read_captures",
    "wrap_session",
]


class _HasFileno(Protocol):
    def fileno(self) -> int: ...


StrPath = Union[str, "os.PathLike[str]", bytes, "os.PathLike[bytes]"]
"""A filesystem path: ``str``, ``bytes`` or ``os.PathLike``."""

FileDescriptorLike = Union[int, _HasFileno]
"""A file descriptor number or an object with ``fileno()``."""


def _path(value: StrPath) -> str:
    # os.fsdecode keeps non-UTF-8 bytes as surrogate escapes, which the extension turns back
    # into the original bytes.
    return os.fsdecode(os.fspath(value))


def _opt_path(value: Optional[StrPath]) -> Optional[str]:
    return None if value is None else _path(value)


def _fd(name: str, value: FileDescriptorLike) -> int:
    if isinstance(value, bool):
        raise TypeError(f"{name} must be a file descriptor or an object with fileno(), not bool")
    if isinstance(value, int):
        return value
    fileno = getattr(value, "fileno", None)
    if fileno is None:
        raise TypeError(
            f"{name} must be a file descriptor or an object with fileno(), "
            f"not {type(value).__name__}"
        )
    fd = fileno()
    if not isinstance(fd, int) or isinstance(fd, bool):
        raise TypeError(f"{name}.fileno() must return an int, not {type(fd).__name__}")
    return fd


def wrap_session(
    command: Iterable[StrPath],
    *,
    policy: StrPath,
    event_source: Optional[str] = None,
    label: Optional[str] = None,
    decision_log: Optional[StrPath] = None,
    decision_log_new: bool = False,
    session_context_out: Optional[StrPath] = None,
    session_stop_out: Optional[StrPath] = None,
    coverage_out: Optional[StrPath] = None,
    capture_dir: Optional[StrPath] = None,
    capture_root: Optional[StrPath] = None,
    dry_run: bool = False,
    drain_timeout: Optional[float] = None,
    max_line_bytes: Optional[int] = None,
    forward_signals: bool = False,
    idle_drain: Optional[float] = None,
    sign_key: Optional[StrPath] = None,
    otlp_endpoint: Optional[str] = None,
    stdin: FileDescriptorLike = 0,
    stdout: FileDescriptorLike = 1,
    stderr: Optional[StrPath] = None,
) -> WrapOutcome:
    """Run one wrapped MCP session until the client closes ``stdin`` (SPEC §3).

    ``command`` is the server argv (a list, not a shell string). Paths accept ``str``, ``bytes``
    or ``os.PathLike``; ``stdin``/``stdout`` accept a descriptor number or an object with
    ``fileno()``; they are duplicated, never closed: close your end of ``stdin`` to end the
    session. ``stderr`` is a file the child's stderr is appended to (``None``: inherited; with
    ``capture_dir``: ``proxy-stderr.log`` in the capture). ``capture_root`` gives every call a
    new capture directory ``ROOT/<UTC YYYYMMDDTHHMMSS.ffffffZ>-<session_id>`` (``ROOT`` is
    created if missing; its parent must exist); the directory chosen is ``outcome.capture_dir``.

    ``sign_key``: an Ed25519 private key file (PKCS#8 as ``assay keygen`` writes it, or a raw
    32-byte seed; mode 0600 or 0400) that signs the capture after its stop record: the capture
    gets ``attestation.dsse.json`` (a DSSE envelope over an in-toto Statement v1; SPEC §4.5),
    ``outcome.signed`` is ``True`` and ``outcome.paths["attestation"]`` names it. It needs
    ``capture_dir`` or ``capture_root``; a missing, unreadable or group/other-accessible key is a
    :class:`ConfigError` (option ``sign_key``) before anything is spawned. A signing failure
    leaves ``outcome.signed`` ``False`` with ``outcome.signature["error"]``, an entry in
    ``evidence_errors`` and ``exit_code`` 3; the capture's verdict is unchanged.

    ``otlp_endpoint``: an ``http://`` URL (as ``assay mcp wrap --otlp-endpoint``): the session's
    spans are also sent there over OTLP/HTTP (JSON, ``POST URL/v1/traces``) as they happen,
    through a bounded queue that never slows the session; spans not delivered are counted in the
    stop record's ``otlp_export`` (``outcome.stop["otlp_export"]``). Any other URL is a
    :class:`ConfigError` (option ``otlp_endpoint``) before anything is spawned.

    The GIL is released for the whole session; Ctrl-C takes effect only when this returns.

    The session ends when the client closes ``stdin``, or at most 2 s after the server closed its
    output if the client sends nothing more. The server never outlives the calling thread or the
    process (it gets SIGKILL if either dies) and inherits only descriptors 0, 1 and 2. After
    ``stdin`` is closed and no request is pending, a server that writes nothing for
    ``idle_drain`` seconds (default 1; ``0`` waits forever) is treated as done and ended.
    Every thread the call started has ended when it returns.

    ``forward_signals=True``: while the session runs, SIGTERM, SIGINT and SIGHUP received by this
    process go to the server instead of to Python's handlers (no ``KeyboardInterrupt``); the
    server ends, and the session ends normally with its stop record. When the call returns, the
    previous handlers are restored unless a handler was installed meanwhile (that one stays). At
    most 1024 sessions of one process forward signals at once; the next raises
    :class:`ConfigError` (option ``forward_signals``). With the default ``False`` no handler is
    touched. In a process forked from this one while the session runs (``os.fork``,
    ``multiprocessing``) the handler puts the previous handlers back and re-raises: the fork
    behaves as if it were never there.

    A library in any host (SPEC §3.1b): a process with descriptors 0, 1 or 2 closed gets a
    correct session (no descriptor the library opens is numbered 0, 1 or 2, and its diagnostics
    never land in what the process numbered 2 unless that was its stderr at the start of the
    call); a process forked while a session runs (``os.fork``, ``multiprocessing`` with
    ``fork``) keeps none of the session's descriptors; relative paths are resolved once, when
    the call starts (a ``os.chdir`` during the session does not move the evidence; the outcome's
    paths are absolute); paths may be ``bytes`` or surrogate-escaped ``str`` (``os.fsdecode``),
    and the outcome's paths come back the same way, naming the files that exist; the server
    starts with ``SIGPIPE`` and ``SIGXFSZ`` at their defaults, as :mod:`subprocess` starts it.

    Returns a :class:`WrapOutcome`. Raises :class:`ConfigError` (a ``ValueError``) when the
    configuration is refused before anything is spawned or created, :class:`WrapError` (an
    ``OSError``) when the session cannot start or run, :class:`StopWriteError` (a ``WrapError``)
    when the stop record could not be written (``.outcome`` holds the observed result).
    """
    if isinstance(command, (str, bytes)) or isinstance(command, os.PathLike):
        raise TypeError("command must be a list of arguments, not a single string")
    argv = [_path(a) for a in command]
    return _native.wrap_session(
        argv,
        policy=_path(policy),
        event_source=event_source,
        label=label,
        decision_log=_opt_path(decision_log),
        decision_log_new=decision_log_new,
        session_context_out=_opt_path(session_context_out),
        session_stop_out=_opt_path(session_stop_out),
        coverage_out=_opt_path(coverage_out),
        capture_dir=_opt_path(capture_dir),
        capture_root=_opt_path(capture_root),
        dry_run=dry_run,
        drain_timeout=drain_timeout,
        max_line_bytes=max_line_bytes,
        forward_signals=forward_signals,
        idle_drain=idle_drain,
        sign_key=_opt_path(sign_key),
        otlp_endpoint=otlp_endpoint,
        stdin=_fd("stdin", stdin),
        stdout=_fd("stdout", stdout),
        stderr=_opt_path(stderr),
    )


def read_capture(path: StrPath) -> Closure:
    """Judge the capture directory ``path`` (SPEC §7). Never raises for a bad capture: an absent,
    malformed, oversized or inconsistent capture is ``closure == "unknown"`` with reasons."""
    return _native.read_capture(_path(path))


def read_captures(root: StrPath) -> List[Closure]:
    """Judge every capture directly under the capture root ``root`` (SPEC §10), in parallel.

    Returns the verdicts in name order, as ``assay capture summary`` lists them: each is a
    :class:`Closure` whose ``capture`` is its directory name. A discovery-only run has
    ``no_session`` true (its ``closure`` stays ``"unknown"``: a missing stop is never evidence);
    a symlinked entry is ``unknown`` and is not followed. Raises :class:`ConfigError` when
    ``root`` does not exist or is not a directory, :class:`WrapError` when it cannot be read.
    """
    return _native.read_captures(_path(root))


def package_capture(
    src: StrPath, dst: StrPath, extra_files: Iterable[StrPath] = ()
) -> PackageManifest:
    """Copy the capture in ``src`` into the new directory ``dst`` with ``manifest.json``.

    ``extra_files`` (helper or source files to put on record) are hashed, not copied. Raises
    :class:`WrapError` when ``dst`` exists, a source file is refused, or a copy fails.
    """
    return _native.package_capture(_path(src), _path(dst), [_path(p) for p in extra_files])


def list_tools(command: List[str], *, timeout: float = 30.0) -> ToolListing:
    """List the tools of the MCP server ``command`` (argv) as ``assay mcp pin`` does (SPEC §5.1).

    The server is started, initialized and listed (``nextCursor`` followed), then ended with the
    bounded cleanup; every line it writes is read with the wrapper's strict rules. Each
    :class:`ListedTool` carries ``sha256``, the digest a pins file records and a decision's
    ``tool_definition_sha256`` names. Raises :class:`WrapError` when the server cannot be
    started, answers an error, sends what the strict rules refuse, or does not answer within
    ``timeout`` seconds; ``ValueError`` for an empty command or a bad timeout.
    """
    if isinstance(command, (str, bytes)):
        raise TypeError("command must be a list of arguments, not a string")
    return _native.list_tools([os.fsdecode(a) for a in command], timeout=float(timeout))
