"""Where the fleet's broker and database are, and its timing, without secrets on command lines.

Each URL comes from the first of: the command line (refused if it holds a password —
shell history and ``ps`` would keep it), the environment (``KBENCH_DB``,
``KBENCH_BROKER``), the config file (``KBENCH_FLEET_CONFIG`` or
``$XDG_CONFIG_HOME/kbench/fleet.toml``), which must belong to the user and be readable
by nobody else (mode 0600 or 0400). PostgreSQL passwords may also come from libpq's own
``PGPASSWORD`` or ``~/.pgpass``.
"""

from __future__ import annotations

import os
import re
import stat
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from kbench.exit_codes import KbenchError

QUEUE_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
QUEUE_PREFIX = "kbench."
"""A machine class ``CLASS`` is served through the Celery queue ``kbench.CLASS``."""


class SettingsError(KbenchError, ValueError):
    """The fleet cannot be set up as given (a missing URL, an unsafe config file)."""


@dataclass(frozen=True)
class FleetTiming:
    """How often workers speak up and how long silence is tolerated.

    ``heartbeat_s``: a worker's heartbeat and lease renewal period. ``lease_s``: a running
    task whose worker has not renewed its lease for this long (missed its heartbeats: 5 of
    them by default) is presumed lost and queued again by a live worker's next heartbeat, so
    a worker killed mid-task is replaced within about 10 to 12 s; a machine not seen for
    this long is ``offline``. A live worker cut from the database longer than that loses its
    task too (its run is then stored ``interrupted``, never twice). ``visibility_timeout_s``:
    Redis redelivers a message nobody acknowledged after this long (the backstop behind
    leases; keep it above the longest task). ``db_retry_s``: how long a worker keeps
    retrying an unreachable database before giving the attempt up. ``max_attempts``:
    failed or lost attempts before a task is ``failed``.
    """

    heartbeat_s: float = 2.0
    lease_s: float = 10.0
    visibility_timeout_s: float = 3600.0
    db_retry_s: float = 300.0
    max_attempts: int = 3

    def __post_init__(self) -> None:
        for item in fields(self):
            if getattr(self, item.name) <= 0:
                raise SettingsError(f"timing.{item.name} must be positive, got {getattr(self, item.name)!r}")
        if self.lease_s < 3 * self.heartbeat_s:
            raise SettingsError(
                f"timing.lease_s ({self.lease_s:g}) must be at least three heartbeats ({3 * self.heartbeat_s:g} s)"
            )


@dataclass(frozen=True)
class FleetSettings:
    """The broker and database URLs (with where each came from) and the timing."""

    broker_url: str
    db_url: str
    timing: FleetTiming = field(default_factory=FleetTiming)
    origins: dict[str, str] = field(default_factory=dict)


def config_path() -> Path:
    """``KBENCH_FLEET_CONFIG``, else ``$XDG_CONFIG_HOME/kbench/fleet.toml``."""
    given = os.environ.get("KBENCH_FLEET_CONFIG")
    if given:
        return Path(given).expanduser()
    config_home = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return config_home / "kbench" / "fleet.toml"


def has_password(url: str) -> bool:
    try:
        return urlsplit(url).password is not None
    except ValueError:
        return False


def redact(url: str) -> str:
    """``url`` with its password replaced by ``***`` (for messages and logs)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return parts._replace(netloc=netloc).geturl()


def read_config(path: Path) -> dict[str, Any]:
    """The config file's table, after checking that nobody else can read or change it."""
    try:
        info = path.stat()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise SettingsError(f"cannot read the fleet config {path}: {exc.strerror}") from exc
    if info.st_uid != os.geteuid():
        raise SettingsError(f"the fleet config {path} belongs to uid {info.st_uid}, not to you; refusing it")
    mode = stat.S_IMODE(info.st_mode)
    if mode & 0o077:
        raise SettingsError(
            f"the fleet config {path} can be read by others (mode {mode:04o}) and may hold passwords: "
            f"chmod 600 {path}"
        )
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingsError(f"cannot read the fleet config {path}: {exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"the fleet config {path} is not valid TOML: {exc}") from exc
    unknown = sorted(set(data) - {"db", "broker", "timing"})
    if unknown:
        raise SettingsError(
            f"the fleet config {path} has unknown keys: {', '.join(unknown)} (known: db, broker, timing)"
        )
    return data


def _timing(table: Any, path: Path) -> FleetTiming:
    if table is None:
        return FleetTiming()
    if not isinstance(table, dict):
        raise SettingsError(f"{path}: [timing] must be a table")
    known = {item.name for item in fields(FleetTiming)}
    unknown = sorted(set(table) - known)
    if unknown:
        raise SettingsError(f"{path}: unknown timing keys: {', '.join(unknown)} (known: {', '.join(sorted(known))})")
    for name, value in table.items():
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise SettingsError(f"{path}: timing.{name} must be a number, got {value!r}")
    return FleetTiming(**table)


def _pick(name: str, argument: str | None, env: str, config: dict[str, Any], path: Path) -> tuple[str, str] | None:
    if argument:
        return argument, "command line"
    if os.environ.get(env):
        return os.environ[env], f"${env}"
    value = config.get(name)
    if value is not None:
        if not isinstance(value, str) or not value:
            raise SettingsError(f"{path}: {name} must be a URL string")
        return value, str(path)
    return None


def load_settings(*, db: str | None = None, broker: str | None = None, need_broker: bool = True) -> FleetSettings:
    """The fleet settings from the arguments, the environment and the config file.

    The database must be PostgreSQL: machines other than this one write to it.
    """
    path = config_path()
    for name, argument, env in (("db", db, "KBENCH_DB"), ("broker", broker, "KBENCH_BROKER")):
        if argument and has_password(argument):
            raise SettingsError(
                f"the --{name} URL holds a password, which would stay in your shell history and in ps: "
                f"put it in ${env} or in {path} (mode 0600)"
            )
    config = read_config(path)
    timing = _timing(config.get("timing"), path)
    picked_db = _pick("db", db, "KBENCH_DB", config, path)
    if picked_db is None:
        raise SettingsError(
            f"no results database for the fleet: set KBENCH_DB, or db in {path}, to a PostgreSQL URL "
            "(postgresql+psycopg://USER@HOST/DB)"
        )
    db_url, db_origin = picked_db
    if not db_url.startswith(("postgresql://", "postgresql+psycopg://")):
        raise SettingsError(
            f"the fleet's results database must be PostgreSQL (postgresql+psycopg://USER@HOST/DB), "
            f"got {redact(db_url)!r} from {db_origin}: workers on other machines write to it"
        )
    if db_url.startswith("postgresql://"):
        db_url = "postgresql+psycopg://" + db_url.removeprefix("postgresql://")
    picked_broker = _pick("broker", broker, "KBENCH_BROKER", config, path)
    if picked_broker is None:
        if need_broker:
            raise SettingsError(
                f"no broker for the fleet: set KBENCH_BROKER, or broker in {path}, to a Redis URL (redis://HOST:6379/0)"
            )
        picked_broker = ("", "none")
    broker_url, broker_origin = picked_broker
    if broker_url and not broker_url.startswith(("redis://", "rediss://", "unix://")):
        raise SettingsError(f"the fleet's broker must be Redis (redis://HOST:PORT/DB), got {redact(broker_url)!r}")
    return FleetSettings(broker_url=broker_url, db_url=db_url, timing=timing,
                         origins={"db": db_origin, "broker": broker_origin})


def check_queue(name: str) -> str:
    """A machine class name usable as a queue: letters, digits, ``.``, ``_``, ``-``."""
    if not QUEUE_PATTERN.match(name):
        raise SettingsError(
            f"{name!r} is not a machine class name: use letters, digits, '.', '_' and '-' (at most 100)"
        )
    return name


def celery_queue(machine_class: str) -> str:
    return QUEUE_PREFIX + machine_class
