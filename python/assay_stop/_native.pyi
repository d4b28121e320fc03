"""The native extension behind ``assay_stop`` (built from ``bindings/python`` by maturin).

Use the re-exports in ``assay_stop``: its ``wrap_session``, ``read_capture`` and
``package_capture`` accept ``os.PathLike`` paths and objects with ``fileno()`` and call these.
"""
from typing import Any, Dict, List, Literal, Optional, final

__all__ = [
    "__version__",
    "wrap_session",
    "read_capture",
    "read_captures",
    "package_capture",
    "list_tools",
    "ToolListing",
    "ListedTool",
    "run_cli",
    "WrapOutcome",
    "Closure",
    "Reason",
    "PackageManifest",
    "ConfigError",
    "WrapError",
    "StopWriteError",
]

__version__: str

def wrap_session(
    command: List[str],
    *,
    policy: str,
    event_source: Optional[str] = None,
    label: Optional[str] = None,
    decision_log: Optional[str] = None,
    decision_log_new: bool = False,
    session_context_out: Optional[str] = None,
    session_stop_out: Optional[str] = None,
    coverage_out: Optional[str] = None,
    capture_dir: Optional[str] = None,
    capture_root: Optional[str] = None,
    dry_run: bool = False,
    drain_timeout: Optional[float] = None,
    max_line_bytes: Optional[int] = None,
    stdin: int = 0,
    stdout: int = 1,
    stderr: Optional[str] = None,
    verbose: bool = False,
    forward_signals: bool = False,
    idle_drain: Optional[float] = None,
    sign_key: Optional[str] = None,
    otlp_endpoint: Optional[str] = None,
) -> WrapOutcome:
    """Run one wrapped MCP session until the client closes ``stdin`` (SPEC §3).

    Proxies JSON-RPC lines between the client descriptors ``stdin``/``stdout`` and the child
    ``command``, enforcing ``policy`` on every ``tools/call`` and writing the requested evidence.
    The descriptors are duplicated and never closed: close your end of ``stdin`` to end the
    session.

    ``capture_dir`` puts every evidence output at its fixed name in that directory.
    ``capture_root`` instead creates, for each call, a new directory
    ``ROOT/<UTC YYYYMMDDTHHMMSS.ffffffZ>-<session_id>`` (mode 0700; ``ROOT`` is created with mode
    0700 when missing, its parent must exist, a symlinked ``ROOT`` is refused) and uses it as the
    capture directory; it is reported in ``outcome.capture_dir`` and ``outcome.paths``. It
    cannot be combined with ``capture_dir``, ``decision_log``, ``session_context_out``,
    ``session_stop_out`` or ``coverage_out``. A discovery-only run inside a capture directory
    writes ``no-session.json`` instead of a stop record.

    ``sign_key`` (needs ``capture_dir`` or ``capture_root``): an Ed25519 private key file
    (PKCS#8 DER or PEM, or a raw 32-byte seed) readable and writable by its owner only (mode
    0600 or 0400; otherwise :class:`ConfigError`, option ``sign_key``, before anything is
    spawned). After the stop record the capture is signed: ``attestation.dsse.json``, a DSSE
    envelope over an in-toto Statement v1 naming every other file of the capture with its
    SHA-256 (SPEC §4.5). ``outcome.signed``/``outcome.signature`` say whether it was; a failure
    is an entry of ``evidence_errors`` (``exit_code`` 3) and never changes the verdict.

    ``otlp_endpoint``: an ``http://`` URL; the session's spans are also sent there over
    OTLP/HTTP JSON (``POST URL/v1/traces``) as they happen, never slowing the session; spans not
    delivered are counted in the stop record's ``otlp_export``. Any other URL is a
    :class:`ConfigError` (option ``otlp_endpoint``) before anything is spawned.

    The GIL is released for the whole session, so other Python threads keep running.
    Ctrl-C (``KeyboardInterrupt``) takes effect only when this call returns.

    The session ends when the client closes ``stdin``, or at most 2 s after the server closed
    its output if the client sends nothing more (a line sent after that ends it as
    ``proxy_error``). After the client closed ``stdin`` and no request of it is pending, a server
    that writes nothing for ``idle_drain`` seconds (default 1; ``0`` waits forever) and keeps its
    stdout open is treated as done and ended by the bounded cleanup. Every thread the call started
    has ended when it returns, and none touches ``stdin`` or ``stdout`` afterwards. The server is spawned by the calling thread and gets SIGKILL if that thread
    or the process dies, so it never outlives them; it inherits only descriptors 0, 1 and 2.

    ``forward_signals`` (default ``False``): while the call runs, SIGTERM, SIGINT and SIGHUP
    received by the process are sent to the server and do not reach Python's handlers (no
    ``KeyboardInterrupt``, no ``signal.signal`` handler); the server ends, and the session ends
    through its normal path with a stop record (e.g. ``termination == "signaled"``,
    ``signal == 15``). When the last such session of the process ends, each signal's previous
    disposition is restored if it still has the library's handler: a handler installed during the
    session (``signal.signal``, ``loop.add_signal_handler``) stays. At most 1024 sessions of one
    process forward signals at the same time; the next raises :class:`ConfigError` (option
    ``forward_signals``) before anything is created. With ``False``, no handler is installed and no disposition is changed. In a
    process forked from this one while the session runs (``os.fork``, ``multiprocessing``), the
    handler puts back the previous dispositions and re-raises the signal, so the fork behaves as
    if the wrapper had never been there.

    A library in any host (SPEC §3.1b): a process with descriptors 0, 1 or 2 closed gets a
    correct session (no descriptor the library opens is numbered 0, 1 or 2, and its diagnostics
    never land in what the process numbered 2 unless that was its stderr at the start of the
    call); a process forked while a session runs (``os.fork``, ``multiprocessing`` with
    ``fork``) keeps none of the session's descriptors; relative paths are resolved once, when
    the call starts (a ``os.chdir`` during the session does not move the evidence; the outcome's
    paths are absolute); paths may be ``bytes`` or surrogate-escaped ``str`` (``os.fsdecode``),
    and the outcome's paths come back the same way, naming the files that exist; the server
    starts with ``SIGPIPE`` and ``SIGXFSZ`` at their defaults, as :mod:`subprocess` starts it.

    Raises:
        ConfigError: the configuration was refused; nothing was spawned or created.
        WrapError: the command was not found (``errno`` ENOENT) or not executable (EACCES), a
            descriptor could not be duplicated, or an I/O failure stopped the session.
        StopWriteError: the session ran but the stop record could not be written;
            ``.outcome`` holds the observed :class:`WrapOutcome`.
    """

def read_capture(path: str) -> Closure:
    """Judge a capture directory (SPEC §7). Never raises for a bad capture: anything absent,
    malformed, over a bound or inconsistent is ``closure == "unknown"`` with reasons."""

def read_captures(root: str) -> List[Closure]:
    """Judge every capture directly under the capture root ``root`` (SPEC §10), as
    ``assay capture summary ROOT`` does: every subdirectory holding a ``protocol.json``, in
    parallel, with the same bounds per capture as :func:`read_capture`.

    Returns one :class:`Closure` per capture in name order; ``Closure.capture`` is the
    directory's name. A discovery-only run is ``closure == "unknown"`` with ``no_session`` true
    (its only reason is ``no_session``); a symlinked entry is not followed and is ``unknown``
    (``not_regular_file``). An empty list means no capture was found.

    Raises:
        ConfigError: ``root`` does not exist or is not a directory (``kind`` is
            ``"invalid_argument"``).
        WrapError: ``root`` cannot be opened or listed.
    """

def package_capture(src: str, dst: str, extra_files: List[str] = ...) -> PackageManifest:
    """Copy the capture ``src`` into the new directory ``dst`` and write ``manifest.json``.

    ``extra_files`` are hashed (not copied) into the manifest.

    Raises:
        ConfigError: ``src`` does not exist or is not a directory (nothing is created).
        WrapError: ``dst`` exists or cannot be created, a source is refused, a copy failed.
    """

def run_cli(argv: List[str], exe: str) -> int:
    """Run the ``assay`` command line with ``argv`` (``argv[0]`` the program name) and return its
    exit status: the command line of the native ``assay`` binary, compiled into this module.
    ``exe`` is the path of the ``assay`` program being run. The GIL is released while it runs.
    Used by the ``assay`` console script (``assay_stop._cli``); it reads this process's stdin
    and writes its stdout and stderr as the binary does (``mcp wrap`` takes descriptors 0 and 1
    for the session and leaves descriptor 1 on ``/dev/null``: run it in a process of its own)."""

@final
class WrapOutcome:
    """What ``wrap_session`` observed. Immutable.

    ``exit_code`` is the ``assay mcp wrap`` exit status for the session (the child's code when it
    exited, 128+signal when signaled, 3 for a wrapper failure); the child's own exit code is
    ``child_exit_code`` (the stop record's ``exit_code``). The other attributes are the stop
    record's fields (SPEC §4.3), also when no stop record was requested.
    """

    @property
    def session_id(self) -> str:
        """32 lowercase hex characters."""
    @property
    def exit_code(self) -> int:
        """The CLI exit status rule applied to this session (SPEC §10)."""
    @property
    def child_exit_code(self) -> Optional[int]:
        """The child's exit code when it exited normally, else ``None``."""
    @property
    def server_id(self) -> str:
        """The configured label (``default-mcp-server`` by default)."""
    @property
    def server_pid(self) -> int:
        """The spawned child's process id."""
    @property
    def session_context_id(self) -> Optional[str]:
        """``evt_context_<session_id>`` when a context event was requested."""
    @property
    def session_end(self) -> Literal["client_closed", "proxy_error"]:
        """How the session ended."""
    @property
    def termination(self) -> Literal["exited", "signaled", "unknown"]:
        """What was observed about the child's end."""
    @property
    def signal(self) -> Optional[int]:
        """The signal number when the child was signaled."""
    @property
    def core_dumped(self) -> Optional[bool]:
        """Whether a core was dumped, when the child was signaled."""
    @property
    def assay_kill_requested(self) -> bool:
        """A kill was attempted during cleanup; claims neither cause nor success."""
    @property
    def group_killed(self) -> bool:
        """Processes of the server's process group other than its leader still ran when the
        kill attempt was made (SPEC §4.3)."""
    @property
    def decision_log(self) -> Literal["complete", "incomplete", "temporary", "absent", "unknown"]:
        """The state of the decision log."""
    @property
    def decision_events_written(self) -> Optional[int]:
        """Decision lines written successfully by this invocation."""
    @property
    def decision_events_dropped(self) -> Optional[int]:
        """Decision emissions refused after the first failed write."""
    @property
    def decision_prefix_sha256(self) -> Optional[str]:
        """SHA-256 of exactly the successfully written decision lines."""
    @property
    def assertion_basis(self) -> str:
        """Always ``producer_observation``."""
    @property
    def non_claims(self) -> List[str]:
        """What the stop record does not claim."""
    @property
    def stop(self) -> Dict[str, Any]:
        """The stop record's ``data`` object with every SPEC §4.3 key (its ``exit_code`` is the
        child's)."""
    @property
    def paths(self) -> Dict[str, Optional[str]]:
        """Paths involved: ``decision_log``, ``session_context``, ``session_stop``, ``coverage``,
        ``protocol``, ``capture_dir`` (with ``capture_root``: the directory chosen for this run),
        ``no_session`` (``None`` when not requested or not written), and ``attestation`` only
        when the capture was signed."""
    @property
    def capture_dir(self) -> Optional[str]:
        """The capture directory, when one was used."""
    @property
    def stop_written(self) -> bool:
        """Whether the stop event was written."""
    @property
    def discovery_only(self) -> bool:
        """A discovery-only run: no session existed and no stop record was written."""
    @property
    def evidence_errors(self) -> List[str]:
        """Evidence writes that failed, one line each; non-empty means ``exit_code`` 3."""
    @property
    def proxy_error(self) -> Optional[str]:
        """Why the session ended with ``proxy_error``, when it did."""
    @property
    def signed(self) -> Optional[bool]:
        """With ``sign_key``: whether ``attestation.dsse.json`` was written; ``None`` without a
        key."""
    @property
    def signature(self) -> Optional[Dict[str, Any]]:
        """With ``sign_key``: ``{"signed": bool, "keyid": str, "error": str | None}`` (the key
        id is the hex SHA-256 of the raw public key); ``None`` without a key."""
    def to_dict(self) -> Dict[str, Any]:
        """A plain dict of every attribute (stop fields at the top level, plus ``stop``)."""

@final
class Reason:
    """One reason behind a verdict that is not ``closed``. Immutable."""

    @property
    def code(self) -> str:
        """A SPEC §7 reason code, e.g. ``missing_file`` or ``digest_mismatch``."""
    @property
    def detail(self) -> str:
        """A one-line description naming the file and field."""
    def to_dict(self) -> Dict[str, str]:
        """``{"code": ..., "detail": ...}``."""

@final
class Closure:
    """The verdict on a capture directory (``assay.capture.closure.v1``). Immutable.

    ``closed`` means a recorded ending with matching retained accounting; it does not mean the
    child succeeded. ``incomplete`` means consistent files with known loss. ``unknown`` means
    anything absent, malformed, over a bound, inconsistent or not retained.
    """

    @property
    def schema(self) -> str:
        """Always ``assay.capture.closure.v1``."""
    @property
    def closure(self) -> Literal["closed", "incomplete", "unknown"]:
        """The verdict."""
    @property
    def exit_status(self) -> int:
        """The ``assay capture read`` exit status for the verdict: ``0`` closed, ``1``
        incomplete, ``3`` unknown (the library's one map, also used by ``python -m assay_stop``)."""
    @property
    def reasons(self) -> List[Reason]:
        """Why the verdict is not ``closed``; empty exactly when it is."""
    @property
    def session_id(self) -> Optional[str]:
        """The session id, when a well-formed one was found."""
    @property
    def capture(self) -> Optional[str]:
        """The capture's directory name under the root, for verdicts from
        :func:`read_captures`; ``None`` from :func:`read_capture`."""
    @property
    def no_session(self) -> bool:
        """A discovery-only run (``no-session.json``, nothing else wrong): ``closure`` is
        ``"unknown"`` and ``no_session`` is its only reason. ``capture summary`` lists it as
        ``no_session`` and leaves it out of the exit status."""
    @property
    def stop(self) -> Optional[Dict[str, Any]]:
        """The stop event's ``data`` fields (without ``session_id`` and ``non_claims``) when the
        stop event passed its checks, else ``None``."""
    @property
    def files(self) -> Dict[str, Dict[str, Any]]:
        """``{name: {"bytes": int, "sha256": str}}`` for every file read within its bound."""
    @property
    def non_claims(self) -> List[str]:
        """What the verdict does not claim."""
    def to_dict(self) -> Dict[str, Any]:
        """The verdict object as a dict, stop fields at the top level (as the JSON)."""
    def to_json(self, *, indent: bool = False) -> str:
        """The verdict as JSON: compact, or pretty-printed (as ``assay capture read``)."""

@final
class PackageManifest:
    """The manifest written by ``package_capture`` (``assay.capture.package.v1``). Immutable.

    File/digest agreement does not authenticate the producer (``not_producer_authentication``).
    """

    @property
    def schema(self) -> str:
        """Always ``assay.capture.package.v1``."""
    @property
    def files(self) -> List[Dict[str, Any]]:
        """``[{"name", "bytes", "sha256"}]`` for every copied capture file."""
    @property
    def producer(self) -> Dict[str, Any]:
        """Producer name, version and the SHA-256 of the binary holding the library."""
    @property
    def extra_files(self) -> List[Dict[str, Any]]:
        """``[{"path", "bytes", "sha256"}]`` for each ``extra_files`` entry."""
    @property
    def closure(self) -> Dict[str, Any]:
        """The closure verdict of the packaged files, as a dict."""
    @property
    def non_claims(self) -> List[str]:
        """What the package does not claim."""
    def to_dict(self) -> Dict[str, Any]:
        """The manifest as a dict (the content of ``manifest.json``)."""

class ConfigError(ValueError):
    """The configuration was refused before anything was spawned or created (SPEC §6).

    ``option`` names the offending option as a keyword (e.g. ``"event_source"``); ``kind`` is ``"config"``
    (or ``"invalid_argument"``); ``exit_status`` is 2.
    """

    option: Optional[str]
    kind: str
    exit_status: int

class WrapError(OSError):
    """The session could not start or run. ``kind`` is ``"command_not_found"`` (``errno``
    ENOENT, ``exit_status`` 127), ``"command_not_executable"`` (EACCES, 126), ``"io"`` or
    ``"internal"`` (3)."""

    kind: str
    exit_status: int

class StopWriteError(WrapError):
    """The session ran, but the requested stop record could not be written (``exit_status`` 3).
    Earlier evidence is intact. ``outcome`` holds the observed :class:`WrapOutcome`."""

    outcome: WrapOutcome

def list_tools(command: List[str], *, timeout: float = 30.0) -> ToolListing:
    """List the tools of the MCP server ``command`` as an MCP client would (SPEC §5.1, the
    listing of ``assay mcp pin``): ``initialize`` proposing the newest protocol revision assay
    knows, ``notifications/initialized``, ``tools/list`` following ``nextCursor``, then the
    bounded cleanup of the server. Every server line is read with the wrapper's strict rules.

    Raises:
        WrapError: the server could not be started, ended early, answered an error, sent a
            line the strict rules refuse (a duplicate key is an error, never a pin), or did not
            answer within ``timeout`` seconds.
        ValueError: ``command`` is empty or ``timeout`` is not a positive number.
    """

@final
class ToolListing:
    """What a server listed (``list_tools``). Immutable."""

    @property
    def protocol_version(self) -> str:
        """The protocol revision the server answered ``initialize`` with."""
    @property
    def server_info(self) -> Optional[Dict[str, Any]]:
        """The server's ``serverInfo``, when it gave one."""
    @property
    def tools(self) -> List[ListedTool]:
        """Every listed tool, in the server's order."""
    def to_dict(self) -> Dict[str, Any]:
        """The listing as plain Python values."""

@final
class ListedTool:
    """One listed tool. Immutable."""

    @property
    def name(self) -> str:
        """The tool's name."""
    @property
    def sha256(self) -> str:
        """SHA-256 (lowercase hex) of the RFC 8785 canonical form of the tool object: the digest
        a pins file records and a decision's ``tool_definition_sha256`` names."""
    @property
    def definition(self) -> Dict[str, Any]:
        """The tool object as the server listed it."""
    def to_dict(self) -> Dict[str, Any]:
        """``{"name", "sha256", "definition"}``."""
