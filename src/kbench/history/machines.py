"""A test machine as people read it, from the fingerprint its runs are stored under."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from kbench.sysinfo.collect import GUEST_MARK

_HOST_FACTS, _GUEST_FACTS = 4, 8


@dataclass(frozen=True)
class Machine:
    """The test machine as its fingerprint describes it (hostname, CPU model and count, memory;
    for runs in a guest, the host's, and the VM's CPUs and memory as ``guest``)."""

    hostname: str
    cpu_model: str | None
    cpus: int | None
    memory_bytes: int | None
    guest: str | None = None

    @classmethod
    def parse(cls, fingerprint: str, hostname: str | None = None) -> Machine:
        """``fingerprint`` as ``kbench.sysinfo.collect.machine_fingerprint`` writes it; one it cannot
        read is the machine ``hostname`` (or the fingerprint itself) and nothing more."""
        parts = fingerprint.split("|")
        if len(parts) not in (_HOST_FACTS, _GUEST_FACTS) or (
                len(parts) == _GUEST_FACTS and parts[_HOST_FACTS] != GUEST_MARK):
            return cls(hostname or fingerprint, None, None, None)
        guest = None
        if len(parts) == _GUEST_FACTS:
            model, count, memory_mb = parts[_HOST_FACTS + 1:]
            guest = ", ".join(filter(None, (
                f"{count} CPUs" if count.isdigit() else "", model if model != "None" else "",
                f"{memory_mb} MiB memory" if memory_mb else "",
            ))) or "guest"
        return cls(hostname or parts[0], parts[1] if parts[1] != "None" else None, _number(parts[2]),
                   _number(parts[3]), guest)

    def facts(self) -> str:
        """``2 CPUs, AMD EPYC 7B13, 24 GiB memory; guest: 2 CPUs, 2048 MiB memory`` (no hostname)."""
        found = []
        if self.cpus:
            found.append(f"{self.cpus} CPUs")
        if self.cpu_model:
            found.append(self.cpu_model)
        if self.memory_bytes:
            found.append(f"{self.memory_bytes / 2**30:.0f} GiB memory")
        text = ", ".join(found)
        if self.guest:
            text = f"{text}; guest: {self.guest}" if text else f"guest: {self.guest}"
        return text

    def describe(self) -> str:
        facts = self.facts()
        return f"{self.hostname}: {facts}" if facts else self.hostname

    def to_json(self) -> dict[str, Any]:
        return {"hostname": self.hostname, "cpu_model": self.cpu_model, "cpus": self.cpus,
                "memory_bytes": self.memory_bytes, "guest": self.guest}


def distinct_names(hostname: str, fingerprints: Iterable[str]) -> dict[str, str]:
    """A readable name for each of the machines one hostname stands for: ``vm (2 CPUs, AMD EPYC …)``;
    machines that their facts do not tell apart (a fingerprint field the description leaves out)
    get the first digits of their fingerprint's digest as well."""
    unique = sorted(set(fingerprints))
    named = {fp: f"{hostname} ({Machine.parse(fp, hostname).facts() or 'unknown machine'})" for fp in unique}
    if len(set(named.values())) < len(unique):
        named = {fp: f"{name} #{hashlib.sha1(fp.encode()).hexdigest()[:6]}" for fp, name in named.items()}
    return named


def _number(text: str) -> int | None:
    return int(text) if text.isdigit() else None
