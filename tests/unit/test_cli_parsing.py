"""Command-line value parsing and request validation (no measurement)."""

from __future__ import annotations

import pytest

from kbench.cli.parsing import parse_duration
from kbench.contract.request import BadRequest, RunRequest


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("2", 2.0), ("2s", 2.0), ("500ms", 0.5), ("1.5m", 90.0), (".25s", 0.25), (" 3 s ", 3.0)],
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "abc", "-1s", "1w", "0", "1..2s"])
def test_bad_durations_name_the_input(text: str) -> None:
    with pytest.raises(ValueError, match="duration"):
        parse_duration(text)


def test_request_builds_probe_arguments() -> None:
    request = RunRequest(benchmark="syscall.pread", params={"size": "512"}, duration_s=1.5,
                         warmup_samples=100, batch=4, cpu=1)
    assert request.probe_args("pread") == [
        "run", "pread", "--param", "size=512", "--duration", "1.5",
        "--warmup-samples", "100", "--batch", "4", "--cpu", "1",
    ]
    default = RunRequest(benchmark="syscall.getppid")
    assert default.probe_args("getppid") == ["run", "getppid", "--samples", "10000", "--batch", "auto"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"samples": 10, "duration_s": 1.0}, "not both"),
        ({"samples": 0}, "at least 1"),
        ({"duration_s": 0.0}, "positive"),
        ({"warmup_samples": 5, "warmup_duration_s": 1.0}, "not both"),
        ({"warmup_samples": -1}, "negative"),
        ({"batch": 0}, "batch"),
        ({"cpu": -2}, "cpu"),
    ],
)
def test_inconsistent_requests_are_refused(kwargs: dict, message: str) -> None:
    with pytest.raises(BadRequest, match=message):
        RunRequest(benchmark="syscall.getppid", **kwargs)


@pytest.mark.parametrize(
    ("text", "samples", "seconds"),
    [("0", 0, None), ("1000", 1000, None), ("+5", 5, None), (" 12 ", 12, None), ("0.5s", None, 0.5),
     ("200ms", None, 0.2), ("1.5m", None, 90.0), ("0.5", None, None), ("0s", None, None), ("lots", None, None),
     ("-3", None, None), ("1e3", None, None), ("", None, None)],
)
def test_the_command_line_and_job_files_read_one_warmup(text: str, samples: int | None, seconds: float | None) -> None:
    """`kbench run --warmup` and a job file's ``warmup:`` accept the same texts as the same
    warm-up (kbench.durations.parse_warmup), each refusing the rest with its own message."""
    import click

    from kbench.cli.parsing import Warmup as WarmupOption
    from kbench.durations import Warmup
    from kbench.jobs import values
    from kbench.jobs.yaml_tree import Scalar

    expected = None if samples is None and seconds is None else Warmup(samples=samples, duration_s=seconds)
    scalar = Scalar(text, "str", 1)
    if expected is None:
        with pytest.raises(click.BadParameter, match="neither a sample count nor a duration with a unit"):
            WarmupOption().convert(text, None, None)
        with pytest.raises(ValueError, match="must be positive" if text == "0s" else "must be a sample count"):
            values.warmup(scalar)
    else:
        assert WarmupOption().convert(text, None, None) == expected
        assert values.warmup(scalar) == expected


def test_a_warmup_of_thousands_of_digits_is_a_usage_error_not_a_crash() -> None:
    import click

    from kbench.cli.parsing import Warmup as WarmupOption

    with pytest.raises(click.BadParameter, match="at most 20 digits"):
        WarmupOption().convert("9" * 5000, None, None)
