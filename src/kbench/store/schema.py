"""The results database schema (SQLAlchemy Core), one place for every table.

Raw samples are stored in order as zlib-compressed little-endian arrays, one row per
column of the probe's output (``ticks`` and, for ``command``, CPU times).
Bump SCHEMA_VERSION (in ``records.py``, readable without SQLAlchemy) and add a step to
``migrations.MIGRATIONS`` for every change.
"""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)

from kbench.store.records import FINDING_COLUMNS_V11 as FINDING_COLUMNS_V11
from kbench.store.records import FLEET_JOB_COLUMNS_V12 as FLEET_JOB_COLUMNS_V12
from kbench.store.records import RUN_COLUMNS_V4 as RUN_COLUMNS_V4
from kbench.store.records import RUN_COLUMNS_V6 as RUN_COLUMNS_V6
from kbench.store.records import RUN_COLUMNS_V8 as RUN_COLUMNS_V8
from kbench.store.records import SCHEMA_VERSION as SCHEMA_VERSION
from kbench.store.records import TARGET_COLUMNS_V10 as TARGET_COLUMNS_V10

metadata = MetaData()

meta = Table(
    "kbench_meta",
    metadata,
    Column("key", String(64), primary_key=True),
    Column("value", Text, nullable=False),
)

machines = Table(
    "machines",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("fingerprint", String(512), nullable=False, unique=True),
    Column("hostname", String(255)),
    Column("cpu_model", String(255)),
    Column("cpu_count", Integer),
    Column("memory_bytes", BigInteger),  # INTEGER is 32-bit on PostgreSQL: 2 GiB would overflow (v5 migrates)
    Column("first_seen", DateTime(timezone=True), nullable=False),
)

targets = Table(
    "targets",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("kind", String(16), nullable=False),
    Column("kernel_release", String(255), nullable=False),
    Column("kernel_version", String(512), nullable=False),
    Column("accel", String(16)),
    Column("build_id", String(128)),
    Column("details", JSON, nullable=False),
    Column("config_digest", String(64)),  # v10: the kernel's .config, in kernel_configs (None: unknown)
    UniqueConstraint("kind", "kernel_release", "kernel_version", "accel", "build_id"),
)

kernel_configs = Table(
    "kernel_configs",
    metadata,
    Column("digest", String(64), primary_key=True),  # SHA-256 of the text (kbench.contract.kernel_config)
    Column("codec", String(16), nullable=False),  # "zlib"
    Column("size", Integer, nullable=False),  # of the text, in bytes
    Column("data", LargeBinary, nullable=False),
    Column("stored_at", DateTime(timezone=True), nullable=False),
)

runs = Table(
    "runs",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("benchmark", String(255), nullable=False),
    Column("metric", String(255), nullable=False),
    Column("unit", String(32), nullable=False),
    Column("direction", String(16), nullable=False),
    Column("status", String(16), nullable=False),  # running | complete | interrupted | failed
    Column("params", JSON, nullable=False),
    Column("request", JSON, nullable=False),
    Column("timer", JSON),
    Column("overhead", JSON),
    Column("probe_header", JSON),
    Column("sysinfo", JSON),
    Column("noise", JSON),
    Column("warnings", JSON),
    Column("tags", JSON),
    Column("error", Text),
    Column("tool_output", Text),
    Column("machine_id", ForeignKey("machines.id")),
    Column("target_id", ForeignKey("targets.id")),
    Column("n_samples", Integer, nullable=False, default=0),
    Column("batch", Integer),
    Column("started_at", DateTime(timezone=True), nullable=False),
    Column("finished_at", DateTime(timezone=True)),
    # v4: who is measuring (a run left ``running`` by a dead owner is ``abandoned``) ...
    Column("owner_pid", Integer),
    Column("owner_boot_id", String(64)),
    Column("owner_host", String(255)),
    # ... what version was measured (history series carry it) ...
    Column("commit", String(64)),
    Column("label", String(255)),
    # ... and the fleet task that made it (one stored run per task, however often delivered).
    Column("task_key", String(128)),
    # v6: an imported run's content digest (``kbench import`` stores each entry of a file once).
    Column("import_digest", String(64)),
    # v8: renewed while the run is measured, so that another host can tell its kbench is gone
    Column("heartbeat_at", DateTime(timezone=True)),
)
Index("ix_runs_benchmark", runs.c.benchmark)
Index("ix_runs_started_at", runs.c.started_at)
Index("ux_runs_task_key", runs.c.task_key, unique=True)
Index("ux_runs_import_digest", runs.c.import_digest, unique=True)

samples = Table(
    "samples",
    metadata,
    Column("run_id", ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
    Column("column", String(32), primary_key=True),
    Column("dtype", String(8), nullable=False),  # numpy dtype string, e.g. "<u8"
    Column("codec", String(16), nullable=False),  # "zlib"
    Column("count", Integer, nullable=False),
    Column("data", LargeBinary, nullable=False),
)

summaries = Table(
    "summaries",
    metadata,
    Column("run_id", ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
    Column("metric", String(255), primary_key=True),
    Column("unit", String(32), nullable=False),
    Column("basis", String(32), nullable=False),  # "raw" or "overhead-corrected"
    Column("n", Integer, nullable=False),
    Column("min", Float, nullable=False),
    Column("median", Float, nullable=False),
    Column("p90", Float, nullable=False),
    Column("p95", Float, nullable=False),
    Column("p99", Float, nullable=False),
    Column("max", Float, nullable=False),
    Column("mean", Float, nullable=False),
    Column("stdev", Float, nullable=False),
    Column("mad", Float, nullable=False),
    Column("steady_state_index", Integer, nullable=False),
    Column("details", JSON, nullable=False),
)

calibrations = Table(
    "calibrations",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("benchmark", String(255), nullable=False),
    Column("metric", String(255), nullable=False),
    Column("target", String(512), nullable=False),  # "local" or the kernel spec
    Column("params", JSON, nullable=False),
    Column("trials", JSON, nullable=False),  # {"A1": [trial statistics], "A2": [...]}
    Column("run_ids", JSON, nullable=False),
    Column("sigma_log", Float, nullable=False),
    Column("mde", JSON, nullable=False),  # [{"trials": n, "power": p, "effect_pct": x}, ...]
    Column("created_at", DateTime(timezone=True), nullable=False),
)
Index("ix_calibrations_lookup", calibrations.c.benchmark, calibrations.c.target)

bisections = Table(
    "bisections",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("repo", Text, nullable=False),
    Column("good", String(64), nullable=False),  # full commit ids
    Column("bad", String(64), nullable=False),
    Column("command", Text, nullable=False),
    Column("build", Text, nullable=False),
    Column("status", String(32), nullable=False),  # running | done | no-difference | failed | aborted
    Column("params", JSON, nullable=False),  # samples, trials, seed, alpha, workdir
    Column("refs", JSON),  # {"good": [trial statistics], "bad": [...], "check": {...}}
    Column("steps", JSON, nullable=False),  # [{"commit", "subject", "trials", "median", "verdict", ...}]
    Column("result", JSON),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
)

# v5: the fleet (``kbench worker``, ``kbench fleet``). A fleet machine is a worker by name: two
# workers on one host are two fleet machines sharing one ``machines`` row (same inventory).
fleet_machines = Table(
    "fleet_machines",
    metadata,
    Column("name", String(255), primary_key=True),
    Column("queue", String(255), nullable=False),  # the machine class it serves
    Column("incarnation", String(64), nullable=False),  # changes at every start of the worker
    Column("machine_id", ForeignKey("machines.id")),
    Column("hostname", String(255)),
    Column("cpu_model", String(255)),
    Column("cpu_count", Integer),
    Column("memory_bytes", BigInteger),
    Column("kernel_release", String(255)),
    Column("virtualization", String(64)),
    Column("sysinfo", JSON),
    Column("allow_command", Boolean, nullable=False),
    Column("pid", Integer),
    Column("state", String(16), nullable=False),  # idle | busy | stopped
    Column("current_task", String(64)),
    Column("started_at", DateTime(timezone=True), nullable=False),
    Column("last_seen", DateTime(timezone=True), nullable=False),
)

fleet_jobs = Table(
    "fleet_jobs",
    metadata,
    Column("id", String(16), primary_key=True),
    Column("name", String(255), nullable=False),  # the job file's name
    Column("job_text", Text, nullable=False),  # the YAML as submitted; every worker validates it again
    Column("queues", JSON, nullable=False),
    Column("repeat", Integer, nullable=False),
    Column("compare", JSON),  # {"axis", "trials", "min_trials", "adaptive", "alpha", "seed"} or None
    Column("submitted_by", String(255)),
    Column("submitted_at", DateTime(timezone=True), nullable=False),
    Column("cancelled_at", DateTime(timezone=True)),
    Column("inputs", JSON),  # v12: what travels with the job (kbench.fleet.inputs.Manifest), None: nothing
)

fleet_tasks = Table(
    "fleet_tasks",
    metadata,
    Column("id", String(64), primary_key=True),  # also the Celery task id; runs.task_key = "<id>#<trial>"
    Column("job_id", ForeignKey("fleet_jobs.id", ondelete="CASCADE"), nullable=False),
    Column("queue", String(255), nullable=False),
    Column("kind", String(16), nullable=False),  # instance | compare
    Column("instance_ids", JSON, nullable=False),
    Column("label", Text, nullable=False),
    Column("repeat_index", Integer, nullable=False),
    Column("state", String(16), nullable=False),  # queued | running | done | failed | cancelled
    Column("attempts", Integer, nullable=False),
    Column("machine", String(255)),  # the fleet machine of the latest attempt
    Column("lease_owner", String(64)),  # that worker's incarnation while it runs the task
    Column("lease_expires", DateTime(timezone=True)),
    Column("cancel_requested", Boolean, nullable=False),
    Column("error", Text),
    Column("errors", JSON, nullable=False),  # [{"attempt", "machine", "error"}]
    Column("run_ids", JSON, nullable=False),
    Column("result", JSON),  # a comparison's report (JSON), or what a watch task found
    Column("spec", JSON),  # v9: what a watch task builds and measures (repository, commits, build, ...)
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("published_at", DateTime(timezone=True)),
    Column("started_at", DateTime(timezone=True)),
    Column("measured_at", DateTime(timezone=True)),  # the last measurement's end
    Column("finished_at", DateTime(timezone=True)),
)
Index("ix_fleet_tasks_job", fleet_tasks.c.job_id)
Index("ix_fleet_tasks_state", fleet_tasks.c.state)
FLEET_TABLES = (fleet_machines, fleet_jobs, fleet_tasks)
"""Tables added by schema v5 (the migration creates them in older databases)."""

# v12: what a fleet job carries to workers that share nothing with its submitter (its files;
# kbench.fleet.inputs, kbench.store.inputs): each input stored once under the SHA-256 of its
# bytes, in chunks of ordinary rows, deleted with its input row.
fleet_inputs = Table(
    "fleet_inputs",
    metadata,
    Column("digest", String(64), primary_key=True),  # SHA-256 of the whole content (hex)
    Column("size", BigInteger, nullable=False),  # bytes of the content (uncompressed)
    Column("chunks", Integer, nullable=False),
    Column("stored_at", DateTime(timezone=True), nullable=False),
)
fleet_input_chunks = Table(
    "fleet_input_chunks",
    metadata,
    Column("digest", ForeignKey("fleet_inputs.digest", ondelete="CASCADE"), primary_key=True),
    Column("seq", Integer, primary_key=True),  # 0, 1, ...: the content is the chunks in order
    Column("codec", String(8), nullable=False),  # "zlib" or "raw" (already compressed: a bzImage)
    Column("data", LargeBinary, nullable=False),
)
INPUT_TABLES = (fleet_inputs, fleet_input_chunks)
"""Tables added by schema v12 (the migration creates them in older databases), with ``fleet_jobs.inputs``."""

# v6: a run's sampled call-graph profile (``kbench run --profile``, ``compare --profile``): folded
# stacks (``kbench.profile.folded``), zlib-compressed, beside the run and never loaded with it.
profiles = Table(
    "profiles",
    metadata,
    Column("run_id", ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
    Column("event", String(64), nullable=False),  # cpu-clock, cycles
    Column("frequency_hz", Integer),
    Column("samples", Integer, nullable=False),
    Column("weight", BigInteger, nullable=False),  # total of the folded weights (periods)
    Column("format", String(16), nullable=False),  # "folded"
    Column("codec", String(16), nullable=False),  # "zlib"
    Column("data", LargeBinary, nullable=False),
    Column("details", JSON, nullable=False),  # how it was recorded: tool, command, scope, window
    Column("created_at", DateTime(timezone=True), nullable=False),
)

# v9: `kbench watch`: the branches it follows, the commits it built and measured, and what it
# found (candidates, then verdicts: confirmed regressions with their culprit, or dropped).
watches = Table(
    "watches",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("key", String(64), nullable=False, unique=True),  # sha256 of repo, branches, build, job and kernel
    Column("repo", Text, nullable=False),
    Column("branches", JSON, nullable=False),  # ["main", ...]
    Column("build", Text, nullable=False),
    Column("job_path", Text, nullable=False),
    Column("job_text", Text, nullable=False),  # as last read
    Column("options", JSON, nullable=False),  # kernel, fleet queue, budget, alpha, seed, max commits, outbox ...
    Column("heads", JSON, nullable=False),  # {branch: {"base": sha, "tested": sha}}
    Column("events", JSON, nullable=False),  # [{"at", "branch", "kind": "force-push", "old", "new", "merge_base"}]
    Column("owner", JSON),  # {"pid", "boot_id", "host"} of the kbench watching now
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
)

watch_commits = Table(
    "watch_commits",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("watch_id", ForeignKey("watches.id", ondelete="CASCADE"), nullable=False),
    Column("sha", String(64), nullable=False),
    Column("branch", String(255), nullable=False),
    Column("parent", String(64)),  # first parent
    Column("subject", Text, nullable=False),
    Column("state", String(16), nullable=False),  # store.watch.COMMIT_STATES
    Column("error", Text),
    Column("run_ids", JSON, nullable=False),  # {instance id: [run ids]}
    Column("found_at", DateTime(timezone=True), nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
    UniqueConstraint("watch_id", "branch", "sha"),
)
Index("ix_watch_commits_watch", watch_commits.c.watch_id)

watch_findings = Table(
    "watch_findings",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("watch_id", ForeignKey("watches.id", ondelete="CASCADE"), nullable=False),
    Column("branch", String(255), nullable=False),
    Column("instance_id", String(16), nullable=False),
    Column("benchmark", String(255), nullable=False),
    Column("metric", String(255), nullable=False),
    Column("params", JSON, nullable=False),
    Column("series_id", String(64)),  # the history series (or ratio series) the candidate was found in
    Column("kind", String(16), nullable=False),  # regression | fix
    Column("state", String(16), nullable=False),  # store.watch.FINDING_STATES
    Column("status", String(16)),  # confirmed regressions: open | fixed | reverted
    Column("good", String(64), nullable=False),  # the candidate's range: after good, up to bad
    Column("bad", String(64), nullable=False),
    Column("candidate", JSON, nullable=False),  # the change point as history found it
    Column("culprit", String(64)),
    Column("culprit_subject", Text),
    Column("confirmation", JSON),  # the interleaved comparison of the range's ends
    Column("verification", JSON),  # the culprit against its parent, measured again
    Column("bisect_id", Integer),
    Column("fixed_by", Integer),  # on a regression: the finding (kind fix) that brought the series back
    Column("fixed_in", String(64)),
    Column("reverted_in", String(64)),
    Column("report", Text),  # the mail's file
    Column("followup", Text),  # the file of the mail saying it was fixed or reverted
    Column("reason", Text),  # why dropped or failed
    Column("log", JSON, nullable=False),  # [line, ...]: what the watch did with it
    # v11: the status a person set (``kbench finding N --status``): acknowledged | author working on it |
    # won't fix, why, and when; the watch's own ``status`` (open | fixed | reverted) is kept beside it
    Column("triage", String(32)),
    Column("triage_reason", Text),
    Column("triage_at", DateTime(timezone=True)),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
)
Index("ix_watch_findings_watch", watch_findings.c.watch_id)
WATCH_TABLES = (watches, watch_commits, watch_findings)
"""Tables added by schema v9 (the migration creates them in older databases), with ``fleet_tasks.spec``."""
