"""The regression report as text (a 0-Day/LKP mail per entry) and as Markdown.

Both render one ``kbench.history.regressions.RegressionReport``: its confirmed regressions
first, each stated from its own side-by-side measurement of the culprit against its parent
(the table, interval and reproduce steps of its mail), then the suspected change points no
confirmation covers, each stated as what it is: where the stored runs shifted.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from kbench.history.confirmed import Confirmation
from kbench.history.regressions import RegressionEntry, RegressionReport, noise_pct
from kbench.report.history_text import short
from kbench.report.lkp_table import Cell, Row, change_text, lkp_table
from kbench.report.observation_summary import markdown_lines as summary_markdown
from kbench.report.observation_summary import summary_rows
from kbench.report.observation_summary import text_lines as summary_text
from kbench.report.units import format_measure, metric_name
from kbench.report.why import WhyRows, subject_of

INDENT = " " * 8
SUSPECTED_NOTE = ("a change point of the stored runs: a candidate, not a culprit; nothing measured it again "
                  "(`kbench watch` confirms candidates side by side, bisects them and names only what holds)")
RULE = "\n" + "-" * 78 + "\n\n"


def render_text(report: RegressionReport, scope: str, why: Mapping[str, WhyRows] | None = None) -> str:
    """Every entry as one mail, separated by a rule; ``scope`` says what was searched; ``why``: the
    counters' and profile rows of each entry, by its key (``kbench.report.why.report_why_rows``)."""
    if report.empty:
        return f"kbench found no regression {scope}.\n"
    found = why or {}
    mails = [confirmed_mail(c, found.get(c.key)) for c in report.confirmed]
    mails += [_suspected_mail(e, found.get(e.key)) for e in report.suspected]
    summary = "\n".join(summary_text(summary_rows(report)))
    return f"kbench found {report.counts()} {scope}.\n\n{summary}\n" + RULE + RULE.join(mails)


subject = subject_of


def side_by_side(confirmation: Confirmation) -> list[str]:
    """The sentence and the table of the culprit measured against its parent."""
    low, high = confirmation.ci_pct
    interval = (f"CI {low:+.1f}% … {high:+.1f}% at {100 * confirmation.confidence:.3g}%, "
                if math.isfinite(low) and math.isfinite(high) else "")
    lines = [f"The culprit measured side by side with its parent (interleaved, {confirmation.blocks} blocks):",
             f"{confirmation.change_pct:+.1f}% ({interval}p={confirmation.p_value:.2g})"]
    if confirmation.parent is not None and confirmation.culprit_side is not None:
        unit = confirmation.unit
        row = Row(metric_name(confirmation.metric, unit),
                  Cell(format_measure(confirmation.parent.median, unit), confirmation.parent.stdev_pct),
                  [(change_text(confirmation.change_pct),
                    Cell(format_measure(confirmation.culprit_side.median, unit), confirmation.culprit_side.stdev_pct))])
        lines += ["", *lkp_table("parent", [confirmation.culprit[:10]], [row])]
    return lines


def confirmed_mail(confirmation: Confirmation, why: WhyRows | None = None) -> str:
    lines = [
        subject(confirmation), "",
        f"kbench found a {confirmation.change_pct:+.1f}% regression of {confirmation.metric} due to commit:", "",
        f"commit: {confirmation.culprit} (\"{confirmation.subject}\")",
        f"branch: {confirmation.branch} of {confirmation.origin.repo or '?'} (kbench watch {confirmation.watch_id}, "
        f"finding {confirmation.finding_id})",
        f"status: {confirmation.status_text}", "",
        f"in testcase: {confirmation.benchmark}",
        *([f"on test machine: {confirmation.machine.describe()}"] if confirmation.machine is not None else []),
        "with following parameters:" if confirmation.params else "with default parameters", "",
        *(f"{INDENT}{key}: {value}" for key, value in confirmation.params.items()),
        *([""] if confirmation.params else []),
        *side_by_side(confirmation), "",
    ]
    if why is not None and not why.empty:
        lines += [*(f"{INDENT}{line}" for line in why.text_lines()), ""]
    if confirmation.report:
        lines += [f"its mail: {confirmation.report}", ""]
    lines += ["To reproduce:", "", *(f"{INDENT}{line}" for line in confirmation.reproduce())]
    return "\n".join(lines) + "\n"


def _suspected_mail(entry: RegressionEntry, why: WhyRows | None = None) -> str:
    s, point = entry.series, entry.point
    correlated = point.correlated
    before, after = correlated.before, correlated.after
    c = point.change
    lines = [
        entry.subject, "",
        f"kbench suspects a {c.change_pct:+.1f}% {point.verdict} of {s.metric} in {entry.range_name()}"
        + (f" (it could start at any of {point.runs_in_range} runs)" if point.runs_in_range > 1 else "") + ":", "",
        f"suspected: {SUSPECTED_NOTE}", "",
        *version_lines(entry), "",
        f"in testcase: {s.benchmark}",
        f"on test machine: {entry.machine.describe()} (target: {s.target})",
        "with following parameters:" if s.params else "with default parameters", "",
    ]
    lines += [f"{INDENT}{key}: {value}" for key, value in s.params.items()]
    if s.params:
        lines.append("")
    lines += _before_after(entry)
    lines.append("")
    if why is not None and not why.empty:
        lines += [f"{INDENT}{line}" for line in why.text_lines()]
        lines.append("")
    if correlated.git_log is not None:
        lines.append(f"correlated commits ({short(before.commit)}..{short(after.commit)}, "
                     f"{len(correlated.git_log)} in all):")
        lines += [f"{INDENT}{g.id[:12]}  {g.date[:10]}  {g.author}: {g.subject}" for g in correlated.git_log]
        lines.append("")
    elif correlated.git_error:
        lines += [f"correlated commits: {correlated.git_error}", ""]
    lines += ["To reproduce:", ""]
    lines += [f"{INDENT}{line}" for line in entry.reproduce]
    return "\n".join(lines) + "\n"


def version_lines(entry: RegressionEntry) -> list[str]:
    correlated = entry.point.correlated
    rows = []
    for name, version in (("last run before", correlated.before), ("first run after", correlated.after)):
        facts = [f"run {version.run_id}", f"{version.started_at:%Y-%m-%d %H:%M} UTC"]
        if version.commit:
            facts.insert(0, f"commit {version.commit[:12]}")
        if version.kernel:
            facts.append(f"kernel {version.kernel}")
        if version.label:
            facts.append(f"label {version.label}")
        rows.append(f"{name}: {', '.join(facts)}")
    return rows


def _before_after(entry: RegressionEntry) -> list[str]:
    s, point = entry.series, entry.point
    c = point.change
    row = Row(metric_name(s.metric, s.unit), Cell(format_measure(c.before.median, s.unit), c.before.stdev_pct),
              [(change_text(c.change_pct), Cell(format_measure(c.after.median, s.unit), c.after.stdev_pct))])
    return [*lkp_table(f"{c.before.n} runs before", [f"{c.after.n} runs after"], [row]),
            f"p={c.p_value:.2g} (confidence {confidence(c.p_value)}); the series' run-to-run noise "
            f"±{noise_pct(point):.1f}%"]


def confidence(p_value: float) -> str:
    """1 − p as a percentage that never rounds up to a certain 100%."""
    return "> 99.99%" if p_value < 1e-4 else f"{100 * (1 - p_value):.2f}%"


def render_markdown(report: RegressionReport, scope: str, why: Mapping[str, WhyRows] | None = None) -> str:
    if report.empty:
        return f"# kbench regression report\n\nNo regression {scope}.\n"
    found = why or {}
    out = [f"# kbench regression report\n\n{report.counts()} {scope}.\n", *summary_markdown(summary_rows(report))]
    for confirmation in report.confirmed:
        out.append(f"## {subject(confirmation)}\n")
        out.append(f"- **confirmed**, {confirmation.status_text}: due to commit `{confirmation.culprit[:12]}` "
                   f"{confirmation.subject}")
        out.append(f"- **measured**: {confirmation.describe()} ({confirmation.blocks} blocks)")
        out.append(f"- **testcase**: `{confirmation.benchmark}` "
                   f"({' '.join(f'{k}={v}' for k, v in confirmation.params.items()) or '-'})")
        if confirmation.machine is not None:
            out.append(f"- **test machine**: {confirmation.machine.describe()}")
        out.append(f"- **found by**: kbench watch {confirmation.watch_id} on {confirmation.branch}, finding "
                   f"{confirmation.finding_id}\n")
        out.append("```\n" + "\n".join(side_by_side(confirmation)) + "\n```\n")
        rows = found.get(confirmation.key)
        if rows is not None and not rows.empty:
            out += [*rows.markdown_lines(), ""]
        out.append("To reproduce:\n\n```sh\n" + "\n".join(confirmation.reproduce()) + "\n```\n")
    for entry in report.suspected:
        s, point = entry.series, entry.point
        c, correlated = point.change, point.correlated
        out.append(f"## {entry.subject}\n")
        out.append(f"- **suspected**: {SUSPECTED_NOTE}")
        out.append(f"- **testcase**: `{s.benchmark}` ({s.describe_params()})")
        out.append(f"- **test machine**: {entry.machine.describe()} (target: {s.target})")
        for line in version_lines(entry):
            name, _, facts = line.partition(": ")
            out.append(f"- **{name}**: {facts}")
        out.append(f"- **series**: `{s.id}`\n")
        out.append("| before | %change | after | metric | p |")
        out.append("|---:|---:|---:|---|---:|")
        out.append(
            f"| {format_measure(c.before.median, s.unit)} ± {c.before.stdev_pct:.1f}% ({c.before.n} runs) "
            f"| {c.change_pct:+.1f}% | {format_measure(c.after.median, s.unit)} ± {c.after.stdev_pct:.1f}% "
            f"({c.after.n} runs) | `{metric_name(s.metric, s.unit)}` | {c.p_value:.2g} |\n"
        )
        rows = found.get(entry.key)
        if rows is not None and not rows.empty:
            out.append("Why (perf counters per operation and the profile delta of the runs on either side):\n")
            out += rows.markdown_lines()
            out.append("")
        if correlated.git_log is not None:
            out.append(f"Correlated commits (`{correlated.commit_range}`):\n")
            out += [f"- `{g.id[:12]}` {g.subject} ({g.author}, {g.date[:10]})" for g in correlated.git_log]
            out.append("")
        elif correlated.git_error:
            out.append(f"Correlated commits: {correlated.git_error}\n")
        out.append("To reproduce:\n\n```sh\n" + "\n".join(entry.reproduce) + "\n```\n")
    return "\n".join(out)
