"""Folded stacks from real perf script output, profile deltas and flame graphs, checked against
counts made a second way (the raw text's sample blocks) and closed forms."""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from scipy import stats

from kbench.profile.delta import MIN_SHARE_PCT, delta_from_dict, delta_lines, profile_delta
from kbench.profile.flame import WIDTH_PX, flame_svg
from kbench.profile.folded import FoldedProfile, fold_perf_script, frame_name, parse_folded

# `perf record -e cpu-clock -F 999 -g -- sh -c './prog 1; dd if=/dev/zero of=/dev/null bs=1 count=100000'`
# then `perf script -F comm,period,ip,sym,dso`, recorded on the development VM
SCRIPT = (Path(__file__).resolve().parents[1] / "data" / "profiles" / "perf-script-prog-dd.txt").read_text()
SVG = "{http://www.w3.org/2000/svg}"


def _blocks() -> list[list[str]]:
    """The samples of SCRIPT read a second way: blank-line separated blocks, symbol of each frame line."""
    found = []
    for block in SCRIPT.strip().split("\n\n"):
        lines = block.splitlines()
        found.append([line.split(None, 1)[1].rsplit(" (", 1)[0] for line in lines[1:]])
    return found


def test_folding_perf_script_keeps_every_sample_and_its_frames() -> None:
    stacks, samples = fold_perf_script(SCRIPT)
    blocks = _blocks()
    assert samples == len(blocks) == 71
    assert sum(stacks.values()) == 71 * 1001001  # each cpu-clock sample weighs its period (ns)
    profile = FoldedProfile(stacks, samples=samples)
    leaf_mix_b = sum(1 for frames in blocks if frames and frames[0] == "mix_b")
    assert profile.self_shares()["mix_b"] == pytest.approx(leaf_mix_b / 71)
    with_syscall = sum(1 for frames in blocks if "do_syscall_64" in frames)
    assert profile.children_shares()["do_syscall_64_[k]"] == pytest.approx(with_syscall / 71)
    assert all(stack.split(";")[0] in ("prog", "dd") for stack in stacks)  # process name at the root
    assert "dd;[dd]" in stacks  # an unresolved frame is named after its object


def test_frame_names() -> None:
    assert frame_name("vfs_read+0x1d", "[kernel.kallsyms]") == "vfs_read_[k]"
    assert frame_name("[unknown]", "/usr/lib/x86_64-linux-gnu/libc.so.6") == "[libc.so.6]"
    assert frame_name("e1000_xmit", "[e1000]") == "e1000_xmit_[k]"
    assert frame_name("__vdso_clock_gettime", "[vdso]") == "__vdso_clock_gettime"


def test_encoded_profile_round_trips() -> None:
    stacks, samples = fold_perf_script(SCRIPT)
    profile = FoldedProfile(stacks, samples=samples, event="cpu-clock", frequency_hz=999)
    again = FoldedProfile.decode(profile.encode(), samples=samples)
    assert again.stacks == profile.stacks
    assert parse_folded("a;b 3\nnot a stack\na;b 2\n") == {"a;b": 5}


def _profile(**weights: int) -> FoldedProfile:
    return FoldedProfile({f"prog;main;{name}": weight for name, weight in weights.items()},
                         samples=sum(weights.values()))


def test_profile_delta_rows_their_noise_and_their_order() -> None:
    base, new = _profile(mix_a=500, mix_b=500), _profile(mix_a=500, mix_b=650)
    delta = profile_delta(base, new, base_label="./prog 0", new_label="./prog 1")
    top = delta.rows[0]
    assert (top.symbol, top.kind) == ("mix_b", "self")
    assert top.base_pct == pytest.approx(50.0) and top.new_pct == pytest.approx(100 * 650 / 1150)
    assert top.change_pct == pytest.approx(100 * (650 / 1150 - 0.5))
    p1, p2 = 0.5, 650 / 1150
    z = stats.norm.ppf(0.975)
    assert top.noise_pp == pytest.approx(100 * z * math.sqrt(p1 * (1 - p1) / 1000 + p2 * (1 - p2) / 1150))
    assert not top.within_noise
    assert [r.change_pct for r in delta.rows] == sorted((r.change_pct for r in delta.rows), reverse=True)
    main = [r for r in delta.rows if r.symbol == "main"]
    assert [(r.kind, r.base_pct, r.new_pct) for r in main] == [("children", 100.0, 100.0)]
    assert delta.shrink(1)[0].symbol == "mix_a"
    assert delta_from_dict(delta.to_dict()) == delta
    lines = delta_lines(delta)
    assert "perf-profile.self.mix_b" in lines[2]


def test_small_symbols_are_no_rows() -> None:
    delta = profile_delta(_profile(big=1000, tiny=2), _profile(big=1000, tiny=3))
    assert {r.symbol for r in delta.rows} == {"big", "main"}
    assert MIN_SHARE_PCT > 100 * 3 / 1003


def test_flame_graph_widths_are_the_shares() -> None:
    stacks, samples = fold_perf_script(SCRIPT)
    profile = FoldedProfile(stacks, samples=samples)
    root = ET.fromstring(flame_svg(profile, title="t"))
    frames = {g.get("data-name"): g for g in root.iter(f"{SVG}g") if g.get("class") == "fg-frame"}
    assert float(frames["all"].get("data-w")) == pytest.approx(WIDTH_PX)
    assert float(frames["mix_b"].get("data-w")) == pytest.approx(WIDTH_PX * profile.self_shares()["mix_b"], abs=1e-3)
    title = frames["mix_b"].find(f"{SVG}title")
    assert title is not None and re.search(r"mix_b \(20,020,020 weight, 28\.17% with children\)", title.text or "")
    assert root.find(f"{SVG}script") is not None


def test_a_differential_flame_graph_is_red_where_a_frame_grew() -> None:
    base, new = _profile(mix_a=500, mix_b=500), _profile(mix_a=500, mix_b=650)
    root = ET.fromstring(flame_svg(new, base=base))
    fills = {g.get("data-name"): g.find(f"{SVG}rect").get("fill")  # type: ignore[union-attr]
             for g in root.iter(f"{SVG}g") if g.get("class") == "fg-frame"}
    red, green, blue = (int(v) for v in re.findall(r"\d+", fills["mix_b"]))
    assert red == 255 and green == blue < 255
    red, green, blue = (int(v) for v in re.findall(r"\d+", fills["mix_a"]))
    assert blue == 255 and red == green < 255
