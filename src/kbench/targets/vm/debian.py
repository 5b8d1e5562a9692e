"""``deb:<release>`` kernels: download Debian's packages and make them usable in place.

The image package gives ``boot/vmlinuz-<release>`` and ``lib/modules/<release>``; the
headers packages (``linux-headers-<release>``, its ``-common`` package and the
matching ``linux-kbuild-*``) give a kbuild tree. Debian's headers refer to
themselves with absolute paths (``include /usr/src/linux-headers-...-common/Makefile``,
``lib/modules/<release>/build -> /usr/src/...``); after extraction into
``cache_dir/kernels/<release>/root`` those are rewritten to point inside the root,
so ``make -C <root>/usr/src/linux-headers-<release> M=...`` works without installing
anything system-wide.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

from kbench import children
from kbench.cachefiles import locked
from kbench.contract.suggest import close_matches

from .errors import KernelResolveError
from .kernel import KernelImage

_RELEASE_RE = re.compile(r"^[0-9][A-Za-z0-9.+~-]*$")
_MARKER = "resolved.json"
_LAYOUT_VERSION = 1


def resolve_debian(release: str, cache_dir: Path, *, spec: str | None = None) -> KernelImage:
    """Resolve ``deb:<release>`` (downloads and extracts on first use)."""
    spec = spec or f"deb:{release}"
    if not _RELEASE_RE.match(release):
        raise KernelResolveError(f"{spec}: {release!r} is not a kernel release name")
    base = cache_dir / "kernels" / release
    root = base / "root"
    with locked(cache_dir / "kernels" / f"{release}.lock"):
        marker = base / _MARKER
        info = _read_marker(marker)
        if info is None:
            info = _download_and_extract(release, base, spec)
            info["root"] = str(root.resolve())
            marker.write_text(json.dumps(info, indent=2) + "\n")
        elif info.get("headers") and info.get("root") != str(root.resolve()):
            _move_headers(root, release, info["root"])  # the cache directory was moved
            info["root"] = str(root.resolve())
            marker.write_text(json.dumps(info, indent=2) + "\n")
    vmlinuz = root / "boot" / f"vmlinuz-{release}"
    modules_dir = root / "lib" / "modules" / release
    build_dir = root / "usr" / "src" / f"linux-headers-{release}"
    if not vmlinuz.is_file():
        raise KernelResolveError(f"{spec}: {vmlinuz} missing from the extracted image package")
    return KernelImage(
        release=release,
        vmlinuz=vmlinuz,
        modules_dir=modules_dir if modules_dir.is_dir() else None,
        build_dir=build_dir if info.get("headers") and build_dir.is_dir() else None,
        spec=spec,
        source="debian",
        config=config if (config := root / "boot" / f"config-{release}").is_file() else None,
    )


def _read_marker(marker: Path) -> dict[str, Any] | None:
    try:
        info = json.loads(marker.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(info, dict) or info.get("layout") != _LAYOUT_VERSION:
        return None
    return info


def _run(argv: list[str], *, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return children.run(argv, cwd=cwd, capture_output=True, text=True)


def _candidate(package: str) -> str | None:
    """The version apt would download for ``package``, or None if it has none."""
    proc = _run(["apt-cache", "policy", package])
    m = re.search(r"^\s*Candidate:\s*(\S+)", proc.stdout, re.M)
    if proc.returncode != 0 or not m or m.group(1) == "(none)":
        return None
    return m.group(1)


def known_releases() -> list[str]:
    """Kernel releases apt knows an image package for (``linux-image-<release>``)."""
    proc = _run(["apt-cache", "pkgnames", "linux-image-"])
    releases = set()
    for name in proc.stdout.split():
        rel = name[len("linux-image-") :]
        if not rel[:1].isdigit() or rel.endswith("-dbg") or rel.endswith("-dbgsym"):
            continue
        releases.add(rel.removesuffix("-unsigned"))
    return sorted(releases)


def _unknown_release_error(release: str, spec: str) -> KernelResolveError:
    known = known_releases()
    near = sorted(close_matches(release, known, n=8, cutoff=0.6))
    if not near:
        near = known[-8:]
    hint = ", ".join(near) if near else "none (run `apt-get update`?)"
    return KernelResolveError(
        f"{spec}: apt knows no package linux-image-{release}-unsigned or "
        f"linux-image-{release}. Releases apt knows nearby: {hint}"
    )


def _header_packages(release: str) -> list[str]:
    """linux-headers-<release> and its -common and linux-kbuild-* dependencies."""
    top = f"linux-headers-{release}"
    if _candidate(top) is None:
        return []
    proc = _run(["apt-cache", "depends", "--important", top])
    pkgs = [top]
    for line in proc.stdout.splitlines():
        m = re.match(r"^\s*\|?(?:Pre)?Depends:\s*(\S+)", line)
        if not m:
            continue
        dep = m.group(1)
        if dep.startswith("<"):
            continue
        if (dep.startswith("linux-headers-") or dep.startswith("linux-kbuild-")) and dep not in pkgs:
            pkgs.append(dep)
    return pkgs


def _download_and_extract(release: str, base: Path, spec: str) -> dict[str, Any]:
    for tool in ("apt-get", "apt-cache", "dpkg-deb"):
        if shutil.which(tool) is None:
            raise KernelResolveError(
                f"{spec}: `{tool}` not found; deb: kernels need a Debian/Ubuntu host with apt "
                "(or pass a bzImage / kernel build tree instead)"
            )
    image_pkg = None
    for name in (f"linux-image-{release}-unsigned", f"linux-image-{release}"):
        if _candidate(name) is not None:
            image_pkg = name
            break
    if image_pkg is None:
        raise _unknown_release_error(release, spec)
    header_pkgs = _header_packages(release)
    packages = [image_pkg, *header_pkgs]

    base.mkdir(parents=True, exist_ok=True)
    with children.scratch_dir("debs-", base) as tmpdir:
        os.chmod(tmpdir, 0o755)  # lets apt's _apt sandbox user write there
        proc = _run(["apt-get", "download", *packages], cwd=tmpdir)
        if proc.returncode != 0:
            tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-15:])
            raise KernelResolveError(f"{spec}: `apt-get download {' '.join(packages)}` failed:\n{tail}")
        debs = sorted(tmpdir.glob("*.deb"))
        staging = children.make_scratch_dir("root-", base)
        try:
            versions = {}
            for deb in debs:
                proc = _run(["dpkg-deb", "-x", str(deb), str(staging)])
                if proc.returncode != 0:
                    raise KernelResolveError(f"{spec}: dpkg-deb -x {deb.name} failed: {proc.stderr.strip()}")
                name, version = deb.name.split("_")[:2]
                versions[name] = version.replace("%3a", ":")
            root = base / "root"
            if root.exists():
                shutil.rmtree(root)
            staging.rename(root)
        finally:
            children.remove_scratch_dir(staging)  # gone once renamed; unregistered either way
    if header_pkgs:
        fix_headers(root, release)
    return {
        "layout": _LAYOUT_VERSION,
        "release": release,
        "packages": versions,
        "headers": bool(header_pkgs),
    }


def _header_texts(root: Path) -> list[Path]:
    files = []
    for d in [*(root / "usr" / "src").glob("linux-headers-*"), *(root / "usr" / "lib").glob("linux-kbuild-*")]:
        if d.is_dir() and not d.is_symlink():
            files += [
                e
                for e in d.iterdir()
                if e.is_file() and not e.is_symlink() and (e.name == "Makefile" or e.name.startswith(".kernel"))
            ]
    return files


def _move_headers(root: Path, release: str, old_root: str) -> None:
    new_root = str(root.resolve())
    for f in _header_texts(root):
        text = f.read_text(errors="surrogateescape")
        if old_root in text:
            f.write_text(text.replace(old_root, new_root), errors="surrogateescape")


_ABS_RE = re.compile(r"(?<![\w./-])/usr/(src|lib)/")


def fix_headers(root: Path, release: str) -> None:
    """Rewrite Debian's absolute header paths so the tree works from ``root``."""
    root = root.resolve()
    candidates: list[Path] = []
    for d in (root / "usr" / "src").glob("linux-headers-*"):
        candidates.append(d)
    candidates += list((root / "usr" / "lib").glob("linux-kbuild-*"))
    candidates.append(root / "lib" / "modules" / release)
    for d in candidates:
        if not d.exists() and not d.is_symlink():
            continue
        for entry in list(d.iterdir()) if d.is_dir() and not d.is_symlink() else []:
            if entry.is_symlink():
                target = os.readlink(entry)
                if target.startswith("/"):
                    entry.unlink()
                    entry.symlink_to(os.path.relpath(str(root) + target, entry.parent))
            elif entry.is_file() and (entry.name == "Makefile" or entry.name.startswith(".kernel")):
                text = entry.read_text(errors="surrogateescape")
                fixed = _ABS_RE.sub(lambda m: f"{root}/usr/{m.group(1)}/", text)
                if fixed != text:
                    entry.write_text(fixed, errors="surrogateescape")
    build = root / "usr" / "src" / f"linux-headers-{release}"
    if build.is_dir():
        fixdep = build / "scripts" / "basic" / "fixdep"
        if not fixdep.exists():
            raise KernelResolveError(
                f"headers for {release} extracted, but {fixdep} is missing: "
                "the linux-kbuild package layout is not the one expected"
            )
