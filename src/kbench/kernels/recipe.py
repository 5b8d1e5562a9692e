"""What config to build a kernel with: a base, kbench's own fragment for what will run,
and the user's fragments (merged last: theirs win).

Bases: ``minimal`` (the tree's ``tinyconfig`` with its ``kvm_guest.config``), ``defconfig``
(the tree's), ``deb:RELEASE`` (Debian's config for that kernel) or a config FILE. The
recipe's digest (what was asked, not the ``.config`` it gives) keys the built-kernel
cache: the same recipe on the same tree and compiler always makes the same ``.config``,
and it is known before anything is checked out.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from kbench.kernels.errors import KernelConfigError
from kbench.kernels.kconfig import Fragment
from kbench.kernels.requirements import checked_features, requirements_fragment

RECIPE_VERSION = "kbench-kernel-config-v1"
MINIMAL = "minimal"
DEFCONFIG = "defconfig"
DEBIAN_PREFIX = "deb:"
CONFIG_SIZE_LIMIT = 4 << 20
"""A config file or fragment larger than this is refused (a .config is about 100-300 KB)."""

DEBIAN_FIXES = Fragment(
    "kbench's options (a Debian config outside Debian's packaging)",
    '# the certificates Debian\'s config names are in Debian\'s packaging only\n'
    'CONFIG_SYSTEM_TRUSTED_KEYS=""\nCONFIG_SYSTEM_REVOCATION_KEYS=""\n',
)


@dataclass(frozen=True)
class ConfigRecipe:
    """``base`` as asked (``minimal``, ``defconfig``, ``deb:RELEASE`` or a file's path) and its text
    when it is a file; ``fragments``: the user's, in order; ``features``: what will run."""

    base: str
    base_text: str | None
    fragments: tuple[Fragment, ...]
    features: frozenset[str]

    @property
    def own_fragment(self) -> Fragment:
        return requirements_fragment(self.features)

    @property
    def asked(self) -> tuple[Fragment, ...]:
        """The fragments whose every option must survive ``olddefconfig``: kbench's and the user's."""
        return (self.own_fragment, *self.fragments)

    def digest(self) -> str:
        """Of what is asked, not of where it was read: a config file's or fragment's content counts,
        its path does not."""
        kind = self.base if self.base_text is None or self.base.startswith(DEBIAN_PREFIX) else "file"
        h = hashlib.sha256(f"{RECIPE_VERSION}\0{kind}\0".encode())
        for text in (self.base_text or "", *(f.text for f in self.asked)):
            h.update(f"{len(text)}\0".encode())
            h.update(text.encode())
        return h.hexdigest()[:24]

    def describe(self) -> str:
        added = f" + {len(self.fragments)} fragment{'s' if len(self.fragments) != 1 else ''}" if self.fragments else ""
        return f"{self.base} + {self.own_fragment.name}{added}"


def read_text(path: Path, what: str) -> str:
    try:
        size = path.stat().st_size
        if size > CONFIG_SIZE_LIMIT:
            raise KernelConfigError(
                f"{what} {path}: {size} bytes, more than the {CONFIG_SIZE_LIMIT >> 20} MiB a config may have")
        return path.read_text(encoding="utf-8", errors="strict")
    except UnicodeDecodeError as exc:
        raise KernelConfigError(f"{what} {path}: not a text file ({exc.reason} at byte {exc.start})") from exc
    except OSError as exc:
        raise KernelConfigError(f"{what} {path}: {exc.strerror or exc}") from exc


def make_recipe(
    config: str,
    fragments: Sequence[Path],
    features: Iterable[str],
    *,
    debian_config: Callable[[str], Path] | None = None,
) -> ConfigRecipe:
    """The recipe for ``--config CONFIG --fragment F…``; ``debian_config(release)`` finds Debian's
    config file of a ``deb:`` base."""
    chosen = checked_features(features)
    own = tuple(Fragment(str(path), read_text(Path(path), "config fragment")) for path in fragments)
    if config in (MINIMAL, DEFCONFIG):
        return ConfigRecipe(config, None, own, chosen)
    if config.startswith(DEBIAN_PREFIX):
        if debian_config is None:
            raise KernelConfigError(f"--config {config}: Debian configs cannot be fetched here")
        text = read_text(debian_config(config[len(DEBIAN_PREFIX):]), "Debian config")
        return ConfigRecipe(config, text, own, chosen)
    path = Path(config).expanduser()
    if not path.exists():
        raise KernelConfigError(
            f"--config {config}: no such file (use minimal, defconfig, deb:RELEASE or a config file)")
    return ConfigRecipe(str(path.resolve()), read_text(path, "config file"), own, chosen)
