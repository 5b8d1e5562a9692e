"""kbench's qemu TCG plugin (``native/qemu-plugin/icount.c``): where it is, how a guest loads it,
and the records it writes on the host (docs/instructions.md).

The plugin counts the instructions a vCPU executes between kbench's marks (kbench.ko's timed
regions, ``kbench-probe --mark``'s samples), kernel and user apart, and appends one 32-byte
record per region to a host file; a guest booted with it runs under TCG (a plugin cannot run
under KVM). ``InstructionLog`` reads what a run added to that file.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from kbench.native import NativeToolMissing

PLUGIN_FILE = "kbench-icount.so"
PLUGIN_ENV = "KBENCH_ICOUNT_PLUGIN"
RECORD = np.dtype([("user", "<u8"), ("kernel", "<u8"), ("vcpu", "<u4"), ("type", "<u4"), ("extra", "<u8")])
"""One record of the plugin's output (native/qemu-plugin/icount.c)."""
REGION = 1
DISARM = 2


def find_plugin() -> Path:
    """The plugin's shared object: ``$KBENCH_ICOUNT_PLUGIN``, beside the running interpreter
    (a virtualenv's ``bin``, where the native build installs it), or NativeToolMissing."""
    override = os.environ.get(PLUGIN_ENV)
    if override:
        path = Path(override)
        if not path.is_file():
            raise NativeToolMissing(f"{PLUGIN_ENV}={override} is not a file")
        return path
    beside = Path(sys.executable).parent / PLUGIN_FILE
    if beside.is_file():
        return beside
    raise NativeToolMissing(f"kbench's qemu plugin {PLUGIN_FILE} not found: install kbench with `make setup` "
                            f"(the native build makes it) or set {PLUGIN_ENV}")


def _opt(path: Path) -> str:
    return str(path).replace(",", ",,")


@dataclass(frozen=True)
class CountedRegions:
    """What the plugin recorded since the last look: every region's instructions, user and
    kernel apart (in the order they ended), and per recorded loop (arm to disarm) the regions
    it recorded and those it lost (an end without a start on its vCPU)."""

    user: np.ndarray
    kernel: np.ndarray
    vcpu: np.ndarray
    loops: tuple[tuple[int, int], ...]

    @property
    def n(self) -> int:
        return int(self.user.size)

    @property
    def lost(self) -> int:
        return sum(lost for _, lost in self.loops)


class InstructionLog:
    """The plugin's output file on the host: ``plugin_option`` for qemu's ``-plugin``, and
    ``take()`` for what was recorded since the last ``take()`` (or ``skip()``)."""

    def __init__(self, path: Path):
        self.path = path
        self.path.touch()
        self._offset = 0

    def plugin_option(self) -> str:
        return f"file={_opt(find_plugin())},out={_opt(self.path)}"

    def skip(self) -> None:
        """Forget what is there (a run's regions start after it)."""
        self._offset = self._size() // RECORD.itemsize * RECORD.itemsize

    def _size(self) -> int:
        try:
            return self.path.stat().st_size
        except FileNotFoundError:
            return 0

    def take(self) -> CountedRegions:
        with open(self.path, "rb") as f:
            f.seek(self._offset)
            data = f.read()
        whole = len(data) // RECORD.itemsize * RECORD.itemsize
        self._offset += whole
        return parse_records(data[:whole])


def parse_records(data: bytes) -> CountedRegions:
    """The plugin's records (whole ones) as regions and loops."""
    records = np.frombuffer(data, dtype=RECORD)
    regions = records[records["type"] == REGION]
    loops = records[records["type"] == DISARM]
    return CountedRegions(
        user=regions["user"].astype(np.uint64), kernel=regions["kernel"].astype(np.uint64),
        vcpu=regions["vcpu"].astype(np.uint32),
        loops=tuple((int(r["user"]), int(r["kernel"])) for r in loops),
    )
