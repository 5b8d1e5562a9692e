"""The regression report as text (a 0-Day/LKP mail per entry) and as Markdown."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kbench.history.confirmed import Confirmation
from kbench.history.regressions import RegressionEntry
from kbench.report.history_text import short
from kbench.report.units import format_value
from kbench.report.why import WhyRows

INDENT = " " * 8
SUSPECTED_NOTE = ("a change point of the stored runs: a candidate, not a culprit; nothing measured it again "
                  "(`kbench watch` confirms candidates side by side, bisects them and names only what holds)")


def counts(entries: Sequence[RegressionEntry], unmatched: Sequence[Confirmation]) -> str:
    confirmed = sum(e.confirmation is not None for e in entries) + len(unmatched)
    suspected = sum(e.confirmation is None for e in entries)
    return f"{confirmed} confirmed regression(s) and {suspected} suspected change point(s)"


def render_text(entries: Sequence[RegressionEntry], scope: str, why: Mapping[int, WhyRows] | None = None,
                unmatched: Sequence[Confirmation] = ()) -> str:
    """Every entry as one mail, separated by a rule; ``scope`` says what was searched; ``why``:
    the counters' and profile rows of each entry (by its first run after the change);
    ``unmatched``: confirmed regressions no change point of the stored runs shows."""
    if not entries and not unmatched:
        return f"kbench found no regression {scope}.\n"
    mails = [_confirmation_mail(c) for c in unmatched]
    mails += [_mail(entry, (why or {}).get(entry.point.correlated.after.run_id)) for entry in entries]
    header = f"kbench found {counts(entries, unmatched)} {scope}.\n\n"
    return header + ("\n" + "-" * 78 + "\n\n").join(mails)


def _confirmation_mail(confirmation: Confirmation) -> str:
    lines = [
        f"[kbench] [{confirmation.benchmark}] {confirmation.culprit[:10]}: {confirmation.metric} "
        f"{confirmation.change_pct:+.1f}% regression", "",
        f"kbench found a {confirmation.change_pct:+.1f}% regression of {confirmation.metric} due to commit:", "",
        f"commit: {confirmation.culprit} (\"{confirmation.subject}\")",
        f"branch: {confirmation.branch} (kbench watch {confirmation.watch_id}, finding {confirmation.finding_id})",
        f"confirmed: {confirmation.describe()}",
        f"status: {confirmation.status_text}",
        "with following parameters:", "",
        *(f"{INDENT}{key}: {value}" for key, value in confirmation.params.items()), "",
    ]
    if confirmation.report:
        lines.append(f"its mail: {confirmation.report}")
    return "\n".join(lines) + "\n"


def _headline(entry: RegressionEntry) -> list[str]:
    s, point = entry.series, entry.point
    c, confirmation = point.change, entry.confirmation
    if confirmation is not None:
        return [
            f"kbench found a {confirmation.change_pct:+.1f}% regression of {s.metric} due to commit "
            f"{confirmation.culprit[:12]} (\"{confirmation.subject}\"):",
            "",
            f"confirmed: {confirmation.describe()} (kbench watch {confirmation.watch_id}, finding "
            f"{confirmation.finding_id}); status: {confirmation.status_text}",
        ]
    return [
        f"kbench suspects a {c.change_pct:+.1f}% {point.verdict} of {s.metric} in {entry.range_name()}"
        + (f" (it could start at any of {point.runs_in_range} runs)" if point.runs_in_range > 1 else "") + ":",
        "",
        f"suspected: {SUSPECTED_NOTE}",
    ]


def _mail(entry: RegressionEntry, why: WhyRows | None = None) -> str:
    s, point = entry.series, entry.point
    correlated = point.correlated
    before, after = correlated.before, correlated.after
    lines = [entry.subject, "", *_headline(entry), ""]
    lines += _version_lines(entry)
    lines += [
        "",
        f"in testcase: {s.benchmark}",
        f"on test machine: {entry.machine.describe()} (target: {s.target})",
        "with following parameters:" if s.params else "with default parameters",
        "",
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


def _version_lines(entry: RegressionEntry) -> list[str]:
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
    s, c = entry.series, entry.point.change
    before = f"{format_value(c.before.median, s.unit)} ±{c.before.stdev_pct:4.1f}%"
    after = f"{format_value(c.after.median, s.unit)} ±{c.after.stdev_pct:4.1f}%"
    width = max(20, len(before), len(after))
    return [
        f"{'before':>{width}}  {'%change':>9}  {'after':>{width}}",
        f"{'-' * width}  {'-' * 9}  {'-' * width}",
        f"{before:>{width}}  {c.change_pct:+8.1f}%  {after:>{width}}  {s.metric}",
        f"{f'{c.before.n} runs':>{width}}  {'':>9}  {f'{c.after.n} runs':>{width}}  "
        f"p={c.p_value:.2g} (confidence {confidence(c.p_value)})",
    ]


def confidence(p_value: float) -> str:
    """1 − p as a percentage that never rounds up to a certain 100%."""
    return "> 99.99%" if p_value < 1e-4 else f"{100 * (1 - p_value):.2f}%"


def render_markdown(entries: Sequence[RegressionEntry], scope: str, why: Mapping[int, WhyRows] | None = None,
                    unmatched: Sequence[Confirmation] = ()) -> str:
    if not entries and not unmatched:
        return f"# kbench regression report\n\nNo regression {scope}.\n"
    out = [f"# kbench regression report\n\n{counts(entries, unmatched)} {scope}.\n"]
    for confirmation in unmatched:
        out.append(f"## [kbench] [{confirmation.benchmark}] {confirmation.culprit[:10]}: {confirmation.metric} "
                   f"{confirmation.change_pct:+.1f}% regression\n")
        out.append(f"- **confirmed**: due to commit `{confirmation.culprit[:12]}` {confirmation.subject}: "
                   f"{confirmation.describe()}; status {confirmation.status_text}\n")
    for entry in entries:
        s, point = entry.series, entry.point
        c, correlated = point.change, point.correlated
        out.append(f"## {entry.subject}\n")
        if entry.confirmation is not None:
            out.append(f"- **confirmed**: due to commit `{entry.confirmation.culprit[:12]}` "
                       f"{entry.confirmation.subject}: {entry.confirmation.describe()}; status "
                       f"{entry.confirmation.status_text}")
        else:
            out.append(f"- **suspected**: {SUSPECTED_NOTE}")
        out.append(f"- **testcase**: `{s.benchmark}` ({s.describe_params()})")
        out.append(f"- **test machine**: {entry.machine.describe()} (target: {s.target})")
        for line in _version_lines(entry):
            name, _, facts = line.partition(": ")
            out.append(f"- **{name}**: {facts}")
        out.append(f"- **series**: `{s.id}`\n")
        out.append("| before | %change | after | metric | p |")
        out.append("|---:|---:|---:|---|---:|")
        out.append(
            f"| {format_value(c.before.median, s.unit)} ± {c.before.stdev_pct:.1f}% ({c.before.n} runs) "
            f"| {c.change_pct:+.1f}% | {format_value(c.after.median, s.unit)} ± {c.after.stdev_pct:.1f}% "
            f"({c.after.n} runs) | `{s.metric}` | {c.p_value:.2g} |\n"
        )
        rows = (why or {}).get(correlated.after.run_id)
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
