"""``kbench tune --reset`` with a state file it must not trust: refused, nothing written.

The state file's path comes from the environment (KBENCH_TUNE_STATE, XDG_STATE_HOME,
HOME); root running ``kbench tune --reset`` with a user's environment must not write
that user's choice of file.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.faults.conftest import Sandbox
from tests.unit.test_noise_tune import make_tree


def _state(path: Path, knobs: dict[str, dict[str, str]], mode: int = 0o600) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"format": "kbench-tune/1", "saved_at": "2026-01-01T00:00:00+00:00", "knobs": knobs}))
    path.chmod(mode)
    return path


def _reset(sandbox: Sandbox, state: Path) -> tuple[int, str]:
    done = sandbox.invoke("tune", "--reset", env=sandbox.env(KBENCH_TUNE_STATE=str(state)))
    assert "Traceback" not in done.stderr
    return done.returncode, done.stderr


@pytest.mark.parametrize(
    ("knobs", "needle"),
    [
        ({"aslr": {"/etc/kbench-test-victim": "2"}}, "not a file of the aslr knob"),
        ({"shell": {"/proc/sys/kernel/randomize_va_space": "2"}}, "not a knob kbench sets"),
        ({"aslr": {"/proc/sys/kernel/randomize_va_space": "2\nrm -rf /"}}, "is not a value"),
        ({"aslr": {"/proc/sys/kernel/randomize_va_space": "7"}}, "is not a value"),
    ],
)
def test_a_state_file_naming_other_paths_or_values_is_refused(
    sandbox: Sandbox, knobs: dict[str, dict[str, str]], needle: str
) -> None:
    victim = Path("/etc/kbench-test-victim")
    assert not victim.exists()
    aslr = Path("/proc/sys/kernel/randomize_va_space")
    before = aslr.read_text() if aslr.exists() else None
    state = _state(sandbox.root / "state.json", knobs)
    saved = state.read_bytes()
    code, error = _reset(sandbox, state)
    assert code == 2 and needle in error and "nothing was changed" in error
    assert not victim.exists()
    assert (aslr.read_text() if aslr.exists() else None) == before
    assert state.read_bytes() == saved  # not consumed either


def test_a_state_file_others_can_write_is_refused(sandbox: Sandbox) -> None:
    state = _state(sandbox.root / "state.json", {"aslr": {"/proc/sys/kernel/randomize_va_space": "2"}}, 0o666)
    code, error = _reset(sandbox, state)
    assert code == 2 and "its mode is 0666" in error and "chmod 600" in error


def test_a_state_file_of_another_user_is_refused(sandbox: Sandbox) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to give the file away")
    state = _state(sandbox.root / "state.json", {"aslr": {"/proc/sys/kernel/randomize_va_space": "2"}})
    os.chown(state, 65534, 65534)
    code, error = _reset(sandbox, state)
    assert code == 2 and "belongs to uid 65534" in error


def test_a_symbolic_link_as_state_file_is_refused(sandbox: Sandbox) -> None:
    real = _state(sandbox.root / "real.json", {"aslr": {"/proc/sys/kernel/randomize_va_space": "2"}})
    link = sandbox.root / "state.json"
    link.symlink_to(real)
    code, error = _reset(sandbox, link)
    assert code == 2 and "symbolic link" in error


def test_the_state_file_kbench_writes_is_private_and_accepted(tmp_path: Path) -> None:
    from kbench.sysinfo.tune import apply_tuning, reset_tuning

    root = make_tree(tmp_path / "root")
    state = tmp_path / "state" / "tune.json"
    apply_tuning({"aslr": "off"}, state_path=state, root=root)
    assert state.stat().st_mode & 0o777 == 0o600
    assert reset_tuning(state_path=state, root=root).results[0].status == "restored"
