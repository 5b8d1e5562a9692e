"""Noise control: set the CPU governor, turbo and ASLR for benchmarking, and put them back.

``apply_tuning`` writes each knob's files (sysfs, /proc/sys) after saving what was there
in a state file; ``reset_tuning`` writes the saved values back and consumes the file.
Applying twice keeps the values saved first, so a reset always returns to the state
before the first apply. Every knob gets a result: applied, unchanged, not available
(with the reason), failed (with the error), restored, or the dry-run equivalents.

The state file's location comes from the environment, so it is not trusted: it must be
a regular file owned by the user running kbench (root, when run as root) and readable
and writable by that user only (0600); it may name only the knobs kbench knows, each
only at the files that knob has on this machine, with a value that file accepts.
Otherwise it is refused whole and nothing is written: running ``kbench tune --reset``
as root with someone else's environment cannot write their choice of file.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from collections.abc import Callable, Mapping
from contextlib import suppress
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

STATE_ENV = "KBENCH_TUNE_STATE"
"""Environment variable overriding the state file's path (tests, several users)."""
STATE_FORMAT = "kbench-tune/1"
STATE_MAX_BYTES = 1 << 20

APPLIED = "applied"
UNCHANGED = "unchanged"
NOT_AVAILABLE = "not available here"
FAILED = "failed"
RESTORED = "restored"
WOULD_APPLY = "would apply"
WOULD_RESTORE = "would restore"


class TuneError(ValueError):
    """A knob name or value that does not exist (nothing was changed)."""


@dataclass(frozen=True)
class Knob:
    """One noise knob: where its files are, and the file value for a requested value."""

    name: str
    description: str
    default: str
    find: Callable[[Path], tuple[list[Path], str]]
    """Files of the knob under a root, or ([], why it is absent)."""
    file_value: Callable[[str, Path], str]
    """The text to write to one file for a requested value (TuneError if invalid)."""
    file_values: Callable[[Path], tuple[str, ...]]
    """The texts one file of the knob accepts (what a reset may write back)."""


def _cpu_dir(root: Path) -> Path:
    return root / "sys/devices/system/cpu"


def _find_governors(root: Path) -> tuple[list[Path], str]:
    files = sorted(
        _cpu_dir(root).glob("cpu[0-9]*/cpufreq/scaling_governor"),
        key=lambda p: int(p.parent.parent.name[3:]),
    )
    return files, "no cpufreq (no /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor; usual in a VM)"


def _governor_value(value: str, path: Path) -> str:
    available_file = path.parent / "scaling_available_governors"
    try:
        available = available_file.read_text().split()
    except OSError:
        return value
    if value not in available:
        raise TuneError(f"governor {value!r} is not offered by {path.parent} (available: {' '.join(available)})")
    return value


def _find_turbo(root: Path) -> tuple[list[Path], str]:
    for relative in ("intel_pstate/no_turbo", "cpufreq/boost"):
        path = _cpu_dir(root) / relative
        if path.exists():
            return [path], ""
    return [], "no intel_pstate/no_turbo or cpufreq/boost (no cpufreq driver with boost control; usual in a VM)"


def _turbo_value(value: str, path: Path) -> str:
    if value not in ("on", "off"):
        raise TuneError(f"turbo must be on or off, not {value!r}")
    enabled = value == "on"
    if path.name == "no_turbo":
        return "0" if enabled else "1"
    return "1" if enabled else "0"


def _find_aslr(root: Path) -> tuple[list[Path], str]:
    path = root / "proc/sys/kernel/randomize_va_space"
    return ([path], "") if path.exists() else ([], "no /proc/sys/kernel/randomize_va_space")


def _aslr_value(value: str, path: Path) -> str:
    named = {"off": "0", "on": "2"}
    if value not in (*named, "0", "1", "2"):
        raise TuneError(f"aslr must be off, on, 0, 1 or 2, not {value!r}")
    return named.get(value, value)


GOVERNOR_NAMES = ("performance", "powersave", "ondemand", "conservative", "schedutil", "userspace")


def _governors_offered(path: Path) -> tuple[str, ...]:
    try:
        return tuple((path.parent / "scaling_available_governors").read_text().split())
    except OSError:
        return GOVERNOR_NAMES


KNOBS: dict[str, Knob] = {
    knob.name: knob
    for knob in (
        Knob("governor", "scaling_governor of every CPU", "performance", _find_governors, _governor_value,
             _governors_offered),
        Knob("turbo", "intel_pstate/no_turbo or cpufreq/boost", "off", _find_turbo, _turbo_value,
             lambda _path: ("0", "1")),
        Knob("aslr", "kernel.randomize_va_space", "off", _find_aslr, _aslr_value, lambda _path: ("0", "1", "2")),
    )
}
"""Every knob, by name; the defaults are what ``kbench tune`` applies."""
DEFAULT_TUNING: dict[str, str] = {name: knob.default for name, knob in KNOBS.items()}


@dataclass(frozen=True)
class KnobResult:
    """What happened to one knob: status, a one-line detail, and the files involved."""

    knob: str
    status: str
    detail: str
    files: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class TuneReport:
    """The outcome of one apply or reset."""

    action: str
    dry_run: bool
    state_path: str
    results: list[KnobResult]
    note: str = ""

    @property
    def failed(self) -> bool:
        """True when a knob that exists here could not be changed."""
        return any(r.status == FAILED for r in self.results)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "failed": self.failed}


def default_state_path() -> Path:
    """$KBENCH_TUNE_STATE, else $XDG_STATE_HOME/kbench/tune.json (~/.local/state/...)."""
    override = os.environ.get(STATE_ENV)
    if override:
        return Path(override)
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local/state")
    return Path(base) / "kbench" / "tune.json"


def _read_private_file(path: Path) -> str | None:
    """The text of ``path`` if it is a regular file owned by this user (root when root),
    mode 0600 or stricter, not reached through a symbolic link; None when it does not
    exist. TuneError says why it is refused otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise TuneError(f"refusing the tune state file {path}: it is a symbolic link; nothing was changed") from exc
        raise TuneError(f"cannot read the tune state file {path}: {exc.strerror or exc}") from exc
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):  # before fdopen, which refuses a directory with IsADirectoryError
        os.close(fd)
        what = "a directory" if stat.S_ISDIR(info.st_mode) else "not a regular file"
        raise TuneError(f"refusing the tune state file {path}: {what}; nothing was changed")
    with os.fdopen(fd, "rb") as f:
        owner = "root" if os.geteuid() == 0 else f"uid {os.geteuid()}"
        if info.st_uid != os.geteuid():
            raise TuneError(f"refusing the tune state file {path}: it belongs to uid {info.st_uid}, not to {owner} "
                            "who runs kbench; nothing was changed")
        if stat.S_IMODE(info.st_mode) & 0o077:
            raise TuneError(f"refusing the tune state file {path}: its mode is {stat.S_IMODE(info.st_mode):04o}, "
                            f"kbench writes it 0600 (if you trust it: chmod 600 {path}); nothing was changed")
        try:
            return f.read(STATE_MAX_BYTES + 1).decode()
        except (OSError, UnicodeDecodeError) as exc:
            raise TuneError(f"cannot read the tune state file {path}: {exc}") from exc


def _load_state(path: Path, root: Path) -> dict[str, dict[str, str]]:
    """Saved previous values: knob -> file -> text; empty when there is no file.

    Every knob, file and value is checked against what kbench manages on this machine
    (``root`` prefixes /sys and /proc); anything else refuses the whole file."""
    text = _read_private_file(path)
    if text is None:
        return {}
    if len(text) > STATE_MAX_BYTES:
        raise TuneError(f"refusing the tune state file {path}: larger than {STATE_MAX_BYTES} bytes")
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise TuneError(f"cannot read the tune state file {path}: {exc}") from exc
    if not isinstance(data, dict) or data.get("format") != STATE_FORMAT:
        found = data.get("format") if isinstance(data, dict) else None
        raise TuneError(f"{path} is not a kbench tune state file (format {found!r})")
    knobs = data.get("knobs")
    if not isinstance(knobs, dict):
        raise TuneError(f"refusing the tune state file {path}: no knobs mapping")
    saved: dict[str, dict[str, str]] = {}
    for name, files in knobs.items():
        knob = KNOBS.get(str(name))
        if knob is None:
            raise TuneError(f"refusing the tune state file {path}: it names {name!r}, not a knob kbench sets "
                            f"({', '.join(KNOBS)}); nothing was changed")
        if not isinstance(files, dict):
            raise TuneError(f"refusing the tune state file {path}: knob {name} has no file mapping")
        known = {str(p) for p in knob.find(root)[0]}
        for file, value in files.items():
            if str(file) not in known:
                raise TuneError(f"refusing the tune state file {path}: it names {file!r}, not a file of the {name} "
                                "knob on this machine; nothing was changed")
            if not isinstance(value, str) or value not in knob.file_values(Path(str(file))):
                raise TuneError(f"refusing the tune state file {path}: {value!r} is not a value {file} takes; "
                                "nothing was changed")
        saved[str(name)] = {str(f): str(v) for f, v in files.items()}
    return saved


def _save_state(path: Path, saved: dict[str, dict[str, str]]) -> None:
    """Write the state atomically (mode 0600), or remove the file when nothing is saved."""
    saved = {knob: files for knob, files in saved.items() if files}
    if not saved:
        path.unlink(missing_ok=True)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"format": STATE_FORMAT, "saved_at": datetime.now(UTC).isoformat(timespec="seconds"), "knobs": saved}
    tmp = path.with_name(path.name + ".tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(json.dumps(data, indent=2) + "\n")
    tmp.replace(path)


def _error_text(exc: OSError) -> str:
    name = errno.errorcode.get(exc.errno or 0, "")
    text = f"{exc.strerror or exc} ({name})" if name else str(exc)
    if exc.errno in (errno.EACCES, errno.EPERM):
        text += ": needs root"
    return text


def _write(path: Path, text: str) -> str | None:
    """Write and read back; None on success, else why it failed."""
    try:
        path.write_text(text + "\n")
        now = path.read_text().strip()
    except OSError as exc:
        return _error_text(exc)
    return None if now == text else f"wrote {text!r} but it reads back {now!r}"


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _requested(knobs: Mapping[str, str] | None) -> dict[str, str]:
    requested = dict(DEFAULT_TUNING if knobs is None else knobs)
    unknown = sorted(set(requested) - set(KNOBS))
    if unknown:
        raise TuneError(f"unknown knob {', '.join(unknown)} (known: {', '.join(KNOBS)})")
    return requested


@dataclass
class _Plan:
    """One knob's files, each with its current and wanted text."""

    knob: str
    value: str
    files: dict[Path, tuple[str, str]]


def _plan_knob(knob: Knob, value: str, root: Path) -> _Plan | KnobResult:
    """What would change; a KnobResult when nothing can (absent, unreadable, unchanged).

    Raises TuneError for a value the knob does not take.
    """
    files, why_absent = knob.find(root)
    if not files:
        return KnobResult(knob.name, NOT_AVAILABLE, why_absent)
    plan: dict[Path, tuple[str, str]] = {}
    for path in files:
        current = _read(path)
        if current is None:
            return KnobResult(knob.name, FAILED, f"cannot read {path}", [str(p) for p in files])
        plan[path] = (current, knob.file_value(value, path))
    if all(current == wanted for current, wanted in plan.values()):
        return KnobResult(knob.name, UNCHANGED, f"already {value} ({len(files)} file(s))", [str(p) for p in files])
    return _Plan(knob.name, value, plan)


def _apply_plan(plan: _Plan, dry_run: bool, state_path: Path, all_saved: dict[str, dict[str, str]]) -> KnobResult:
    names = [str(p) for p in plan.files]
    changes = {p: cw for p, cw in plan.files.items() if cw[0] != cw[1]}
    before = ", ".join(sorted({current for current, _ in changes.values()}))
    if dry_run:
        return KnobResult(plan.knob, WOULD_APPLY, f"{plan.value} in {len(changes)} file(s), now {before}", names)
    saved = all_saved.setdefault(plan.knob, {})
    added = [str(p) for p in changes if str(p) not in saved]
    for path, (current, _) in changes.items():
        saved.setdefault(str(path), current)  # the first apply's value wins
    try:
        _save_state(state_path, all_saved)  # saved before anything changes
    except OSError as exc:
        for name in added:
            saved.pop(name)
        return KnobResult(plan.knob, FAILED, f"nothing changed: cannot save the previous values in "
                          f"{state_path}: {_error_text(exc)}", names)
    errors = {}
    for path, (_, wanted) in changes.items():
        error = _write(path, wanted)
        if error is not None:
            errors[path] = error
            if _read(path) == saved.get(str(path)):
                saved.pop(str(path), None)  # nothing changed: nothing to restore
    with suppress(OSError):  # the file written above already holds every value to restore
        _save_state(state_path, all_saved)
    if errors:
        path, error = next(iter(errors.items()))
        return KnobResult(plan.knob, FAILED, f"{path}: {error} ({len(errors)} of {len(changes)} failed)", names)
    return KnobResult(plan.knob, APPLIED, f"{plan.value} in {len(changes)} file(s) (was {before})", names)


def apply_tuning(
    knobs: Mapping[str, str] | None = None,
    *,
    dry_run: bool = False,
    state_path: Path | None = None,
    root: Path = Path("/"),
) -> TuneReport:
    """Set each knob (name -> value; default DEFAULT_TUNING) and save the previous values.

    Values: governor = a governor name the CPUs offer; turbo = on|off; aslr =
    off|on|0|1|2. ``root`` prefixes /sys and /proc (tests). An unknown knob or value
    raises TuneError before anything is changed.
    """
    requested = _requested(knobs)
    state = state_path or default_state_path()
    all_saved = _load_state(state, root)
    plans = [_plan_knob(KNOBS[name], value, root) for name, value in requested.items()]
    results = [
        plan if isinstance(plan, KnobResult) else _apply_plan(plan, dry_run, state, all_saved)
        for plan in plans
    ]
    return TuneReport("apply", dry_run, str(state), results)


def reset_tuning(
    knobs: list[str] | None = None, *, dry_run: bool = False, state_path: Path | None = None,
    root: Path = Path("/"),
) -> TuneReport:
    """Write back the values saved by apply_tuning (all knobs, or only ``knobs``).

    Restored entries leave the state file; it is removed once empty. Entries that
    cannot be written back stay, so a later reset can retry. A state file that is not
    private to this user, or names anything but known knobs' files and values on this
    machine (``root`` prefixes /sys and /proc), raises TuneError and nothing is written.
    """
    names = list(KNOBS) if knobs is None else knobs
    _requested(dict.fromkeys(names, ""))
    state = state_path or default_state_path()
    all_saved = _load_state(state, root)
    if not any(all_saved.get(name) for name in names):
        return TuneReport("reset", dry_run, str(state), [], note=f"nothing to reset: no saved values in {state}")
    results = []
    for name in names:
        saved = all_saved.get(name) or {}
        if not saved:
            continue
        files = list(saved)
        if dry_run:
            results.append(KnobResult(name, WOULD_RESTORE, f"{len(files)} file(s)", files))
            continue
        errors = {}
        for path, previous in list(saved.items()):
            error = _write(Path(path), previous)
            if error is None:
                del saved[path]
            else:
                errors[path] = error
        try:
            _save_state(state, all_saved)
        except OSError as exc:
            errors.setdefault(str(state), f"restored, but the state file cannot be updated: {_error_text(exc)}")
        if errors:
            path, error = next(iter(errors.items()))
            results.append(KnobResult(name, FAILED, f"{path}: {error}", files))
        else:
            values = ", ".join(sorted({_read(Path(p)) or "?" for p in files}))
            results.append(KnobResult(name, RESTORED, f"back to {values} in {len(files)} file(s)", files))
    return TuneReport("reset", dry_run, str(state), results)
