"""Profiles in other tools' formats: speedscope JSON and pprof's profile.proto, written and read
back to the same folded stacks; the protobuf wire format underneath."""

from __future__ import annotations

import gzip
import json

import pytest

from kbench.profile import protowire
from kbench.profile.folded import FoldedProfile, parse_folded
from kbench.profile.pprof import PprofError, read_pprof, to_pprof
from kbench.profile.speedscope import SpeedscopeError, read_speedscope, to_speedscope
from tests.profile_readers import speedscope_problems

STACKS = {
    "kbench-probe;[kbench-probe]": 548709720,
    "kbench-probe;[kbench-probe];entry_SYSCALL_64_after_hwframe_[k];do_syscall_64_[k];__x64_sys_getppid_[k]": 200040,
    "kbench-probe;[kbench-probe];entry_SYSCALL_64_after_hwframe_[k];do_syscall_64_[k]": 421880000,
    "hackbench;main;operator new(unsigned long);malloc": 7,  # spaces and parentheses in a frame
    "hackbench": 3,  # a sample perf resolved no frame of
    "swapper;ïnit_π_[k]": 1 << 40,  # not ASCII; a weight past 32 bits
}


def _profile(event: str = "cpu-clock", frequency: int | None = 4999) -> FoldedProfile:
    return FoldedProfile(STACKS, event=event, frequency_hz=frequency, samples=5539, details={"window": "measured"})


@pytest.mark.parametrize("value", [0, 1, 127, 128, 300, 1 << 35, (1 << 63) - 1, -1, -(1 << 63)])
def test_varints_round_trip(value: int) -> None:
    encoded = protowire.varint(value)
    decoded, end = protowire.read_varint(encoded, 0)
    assert end == len(encoded) and protowire.signed(decoded) == value
    assert len(encoded) == (10 if value < 0 else max(1, (value.bit_length() + 6) // 7))


def test_truncated_messages_are_refused() -> None:
    with pytest.raises(protowire.WireError):
        list(protowire.fields(protowire.bytes_field(1, b"abcdef")[:-2]))
    with pytest.raises(protowire.WireError):
        protowire.read_varint(b"\x80\x80", 0)


@pytest.mark.parametrize("event,unit", [("cpu-clock", "nanoseconds"), ("cycles", "none")])
def test_speedscope_file_is_valid_and_reads_back(event: str, unit: str) -> None:
    data = to_speedscope(_profile(event), "run 7: syscall.getppid")
    document = json.loads(data)
    assert speedscope_problems(document) == []
    [profile] = document["profiles"]
    assert profile["type"] == "sampled" and profile["unit"] == unit
    assert profile["endValue"] == sum(STACKS.values()) and profile["startValue"] == 0
    # root first: the process name is each sample's first frame
    names = [frame["name"] for frame in document["shared"]["frames"]]
    assert {names[sample[0]] for sample in profile["samples"]} == {"kbench-probe", "hackbench", "swapper"}
    assert read_speedscope(data) == STACKS


def test_the_schema_checks_catch_what_speedscope_refuses() -> None:
    good = json.loads(to_speedscope(_profile(), "x"))
    assert speedscope_problems({**good, "$schema": "http://example.invalid"}) != []
    broken = json.loads(json.dumps(good))
    broken["profiles"][0]["weights"].pop()
    broken["profiles"][0]["unit"] = "cycles"
    broken["profiles"][0]["samples"][0].append(len(good["shared"]["frames"]))
    problems = speedscope_problems(broken)
    assert any("weights" in p for p in problems) and any("ValueUnit" in p for p in problems)
    assert any("outside shared.frames" in p for p in problems)
    del broken["shared"]
    assert "missing required shared" in speedscope_problems(broken)


def test_speedscope_reader_refuses_other_files() -> None:
    with pytest.raises(SpeedscopeError, match="not JSON"):
        read_speedscope(b"kbench-probe;main 12\n")
    with pytest.raises(SpeedscopeError, match=r"\$schema"):
        read_speedscope(b'{"profiles": []}')
    evented = {"$schema": "https://www.speedscope.app/file-format-schema.json", "shared": {"frames": []},
               "profiles": [{"type": "evented", "name": "e", "unit": "none", "startValue": 0, "endValue": 0,
                             "events": []}]}
    with pytest.raises(SpeedscopeError, match="evented"):
        read_speedscope(json.dumps(evented).encode())


@pytest.mark.parametrize("event,kind,unit", [("cpu-clock", "cpu", "nanoseconds"), ("cycles", "cycles", "count")])
def test_pprof_profile_reads_back(event: str, kind: str, unit: str) -> None:
    data = to_pprof(_profile(event), comments=["kbench run 7: syscall.getppid"], time_nanos=1_700_000_000 * 10**9)
    assert data[:2] == b"\x1f\x8b"  # gzip, as profile.proto asks of a file
    found = read_pprof(data)
    assert found.stacks == STACKS
    assert found.sample_types == [(kind, unit)] and found.period_type == (kind, unit)
    assert found.period == (round(1e9 / 4999) if event == "cpu-clock" else 0)
    assert found.comments == ["kbench run 7: syscall.getppid"]
    assert read_pprof(gzip.decompress(data)).stacks == STACKS  # uncompressed is read too
    assert to_pprof(_profile(event)) == to_pprof(_profile(event))  # no time stamp in the gzip header


def test_pprof_reader_takes_unpacked_fields_inlined_lines_and_bare_addresses() -> None:
    """A message as another writer may lay it out: repeated fields not packed, a location with two
    lines (an inlined function first, its caller last), a location with only an address."""
    strings = ["", "samples", "count", "main", "inlined_helper", "caller"]
    body = protowire.bytes_field(1, protowire.int_field(1, 1) + protowire.int_field(2, 2))
    line = lambda fn: protowire.bytes_field(4, protowire.int_field(1, fn))  # noqa: E731
    body += protowire.bytes_field(4, protowire.int_field(1, 1) + line(1))
    body += protowire.bytes_field(4, protowire.int_field(1, 2) + line(2) + line(3))
    body += protowire.bytes_field(4, protowire.int_field(1, 3) + protowire.int_field(3, 0x401000))
    for ident, name in ((1, 3), (2, 4), (3, 5)):
        body += protowire.bytes_field(5, protowire.int_field(1, ident) + protowire.int_field(2, name))
    sample = b"".join(protowire.int_field(1, i) for i in (3, 2, 1)) + protowire.int_field(2, 5)
    body += protowire.bytes_field(2, sample)
    for text in strings:
        body += protowire.bytes_field(6, text.encode())
    assert read_pprof(body).stacks == {"main;caller;inlined_helper;0x401000": 5}


def test_pprof_reader_refuses_other_files() -> None:
    with pytest.raises(PprofError):
        read_pprof(b"\x1f\x8b not really gzip")
    with pytest.raises(PprofError, match="sample_type"):
        read_pprof(protowire.bytes_field(6, b""))
    with pytest.raises(PprofError):
        read_pprof(b"kbench-probe;main 12\n")


def test_folded_text_is_frame_lines_with_a_count() -> None:
    text = _profile().folded_text()
    assert parse_folded(text) == STACKS
    for line in text.splitlines():
        stack, _, count = line.rpartition(" ")
        assert count.isdigit() and stack.split(";")[0] in ("kbench-probe", "hackbench", "swapper")
