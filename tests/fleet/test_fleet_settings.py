"""Fleet settings: URLs from the environment or a private config file, never passwords in argv;
and the plan of a submission (tasks per instance, class and repeat; comparisons)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kbench.fleet.demo import write_config
from kbench.fleet.plan import NotAllowed, PlanError, check_allowed, compare_groups, plan_tasks
from kbench.fleet.settings import FleetTiming, SettingsError, check_queue, has_password, load_settings, redact
from kbench.jobs import expand_job

PG = "postgresql+psycopg://kbench@db.lab:5432/kbench"


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("KBENCH_DB", "KBENCH_BROKER"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("KBENCH_FLEET_CONFIG", str(tmp_path / "fleet.toml"))


def test_urls_come_from_the_environment_before_the_config_file(monkeypatch: pytest.MonkeyPatch,
                                                                tmp_path: Path) -> None:
    write_config(tmp_path / "fleet.toml", db=PG, broker="redis://:s3cret@queue.lab:6379/0",
                 timing=FleetTiming(heartbeat_s=2, lease_s=20))
    settings = load_settings()
    assert settings.broker_url == "redis://:s3cret@queue.lab:6379/0" and settings.db_url == PG
    assert settings.timing.lease_s == 20 and settings.origins["db"] == str(tmp_path / "fleet.toml")
    monkeypatch.setenv("KBENCH_BROKER", "redis://queue2.lab:6379/1")
    assert load_settings().broker_url == "redis://queue2.lab:6379/1"
    assert load_settings(broker="redis://queue3.lab:6379/0").origins["broker"] == "command line"


def test_a_config_file_others_can_read_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "fleet.toml"
    write_config(path, db=PG, broker="redis://h:6379/0", timing=FleetTiming())
    path.chmod(0o644)
    with pytest.raises(SettingsError, match=r"can be read by others \(mode 0644\).*chmod 600"):
        load_settings()
    path.chmod(0o400)
    assert load_settings().db_url == PG


def test_bad_config_files_and_urls_are_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "fleet.toml"
    path.write_text('db = "x"\nbrokr = "redis://h"\n')
    path.chmod(0o600)
    with pytest.raises(SettingsError, match="unknown keys: brokr"):
        load_settings()
    path.write_text('db = "x"\n[timing]\nlease_s = 1\nheartbeat_s = 1\n')
    with pytest.raises(SettingsError, match="at least three heartbeats"):
        load_settings()
    path.write_text("db = [\n")
    with pytest.raises(SettingsError, match="not valid TOML"):
        load_settings()
    path.unlink()
    with pytest.raises(SettingsError, match="no results database for the fleet"):
        load_settings()
    monkeypatch.setenv("KBENCH_DB", "/home/me/kbench.db")
    with pytest.raises(SettingsError, match="must be PostgreSQL"):
        load_settings()
    monkeypatch.setenv("KBENCH_DB", "postgresql://kbench@db/kbench")
    assert load_settings(need_broker=False).db_url == "postgresql+psycopg://kbench@db/kbench"
    with pytest.raises(SettingsError, match="no broker for the fleet"):
        load_settings()
    with pytest.raises(SettingsError, match="must be Redis"):
        load_settings(broker="amqp://guest@rabbit//")


def test_passwords_on_the_command_line_are_refused(tmp_path: Path) -> None:
    assert has_password("redis://:pw@h:6379/0") and not has_password("redis://h:6379/0")
    assert redact("postgresql+psycopg://u:pw@h/db") == "postgresql+psycopg://u:***@h/db"
    env = {k: v for k, v in os.environ.items() if k not in ("KBENCH_DB", "KBENCH_BROKER")}
    env["KBENCH_FLEET_CONFIG"] = str(tmp_path / "absent.toml")
    for args in (["worker", "--queue", "x", "--db", "postgresql://u:secret@h/db", "--broker", "redis://h:1/0"],
                 ["--db", "postgresql://u:secret@h/db", "fleet", "machines"],
                 ["fleet", "submit", "x.yaml", "--queue", "x", "--broker", "redis://:secret@h:1/0"]):
        out = subprocess.run([sys.executable, "-m", "kbench.cli", *args], capture_output=True, text=True, env=env,
                             timeout=120)
        assert out.returncode == 2, out.stderr
        assert "holds a password" in out.stderr and "shell history" in out.stderr
        assert out.stderr.count("\n") == 1  # one line, no traceback


def test_machine_class_names() -> None:
    assert check_queue("lkp-skl-2sp7") == "lkp-skl-2sp7" and check_queue("IVB.Desktop_2") == "IVB.Desktop_2"
    for bad in ("", "skl sp", "-x", "a/b", "x" * 101):
        with pytest.raises(SettingsError, match="not a machine class name"):
            check_queue(bad)


MATRIX = """\
benchmark: [syscall.getppid, syscall.noop]
target: [local, "deb:6.1.0-56-amd64", "deb:6.12.0-1-amd64"]
samples: 100
"""


def test_one_task_per_instance_per_class_and_repeat() -> None:
    instances = expand_job(MATRIX, cpu_count=2)
    tasks = plan_tasks(instances, queues=["skl-sp", "ivb-ep"], repeat=3, compare_axis=None)
    assert len(tasks) == 6 * 2 * 3 and len({t.id for t in tasks}) == len(tasks)
    for queue in ("skl-sp", "ivb-ep"):
        for index in range(3):
            assert sorted(t.instance_ids[0] for t in tasks if t.queue == queue and t.repeat_index == index) == sorted(
                i.id for i in instances)


def test_a_comparison_groups_the_instances_that_differ_only_in_its_key() -> None:
    instances = expand_job(MATRIX, cpu_count=2)
    groups = compare_groups(instances, "target")
    assert [[i.target for i in g] for g in groups] == [["local", "deb:6.1.0-56-amd64", "deb:6.12.0-1-amd64"]] * 2
    tasks = plan_tasks(instances, queues=["skl-sp"], repeat=1, compare_axis="target")
    assert [t.kind for t in tasks] == ["compare", "compare"]
    assert tasks[0].label == "syscall.getppid: local vs 6.1.0-56-amd64 vs 6.12.0-1-amd64"
    with pytest.raises(PlanError, match="have nothing to compare with"):
        compare_groups(expand_job("benchmark: syscall.getppid\n", cpu_count=2), "target")
    with pytest.raises(PlanError, match="no 'cmd' to compare on"):
        compare_groups(instances, "cmd")


def test_what_a_worker_refuses() -> None:
    command = expand_job("benchmark: command\nparams:\n  cmd: [true, false]\n", cpu_count=2)
    with pytest.raises(NotAllowed, match="--allow-command"):
        check_allowed(command, allow_command=False)
    check_allowed(command, allow_command=True)
    image = expand_job("benchmark: syscall.getppid\ntarget: ../bzImage\n", cpu_count=2)
    with pytest.raises(PlanError, match="is a path on the submitting machine that the job does not carry"):
        check_allowed(image, allow_command=True)
    check_allowed(image, allow_command=True, carried={"../bzImage"})  # a kernel the job carries (fleet/kernels.py)
