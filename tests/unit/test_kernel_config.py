"""Config fragments merged as the kernel's scripts/kconfig/merge_config.sh merges them (the
real script is the reference), config differences as scripts/diffconfig prints them, and
the check of the options asked for against a .config."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from kbench.kernels.check import lost_options
from kbench.kernels.diffconfig import diff_configs
from kbench.kernels.kconfig import Fragment, merge_fragments, parse_config
from kbench.kernels.kconfig_deps import evaluate, explain_lost, read_kconfig
from tests.kernel_source import kernel_source_files

BASE = """#
# Automatically generated file; DO NOT EDIT.
#
CONFIG_64BIT=y
# CONFIG_SMP is not set
CONFIG_LOCALVERSION=""
CONFIG_LOG_BUF_SHIFT=14
CONFIG_SLOB=y
# CONFIG_SLUB is not set
CONFIG_PRINTK=y"""  # no newline at the end, as a hand-written file may be

FRAGMENTS = [
    Fragment("one.config", "CONFIG_SMP=y\n# CONFIG_SLOB is not set\nCONFIG_SLUB=y\nCONFIG_NET=y\n"),
    Fragment("same.config", "CONFIG_PRINTK=y\nCONFIG_64BIT=y\n"),  # no change: no warning
    Fragment("two.config", "# a comment line\nCONFIG_LOCALVERSION=\"-kbench\"\nCONFIG_LOG_BUF_SHIFT=17\n"
                           "# CONFIG_NET is not set"),  # redefines one.config's, no newline at the end
    Fragment("three.config", "CONFIG_NET=y\nCONFIG_INET=y\n"),
]


@pytest.fixture(scope="module")
def scripts() -> Path:
    return kernel_source_files("scripts/kconfig/merge_config.sh", "scripts/diffconfig") / "scripts"


def _merge_config_sh(
    scripts: Path, tmp_path: Path, base: str, fragments: list[Fragment]
) -> tuple[str, list[tuple[str, str]]]:
    """What the kernel's merge_config.sh -m writes, and the (option, fragment) pairs it says it redefined."""
    (tmp_path / "base").write_text(base)
    paths = []
    for fragment in fragments:
        (tmp_path / fragment.name).write_text(fragment.text)
        paths.append(fragment.name)
    out = tmp_path / "out"
    out.mkdir()
    proc = subprocess.run(["sh", str(scripts / "kconfig" / "merge_config.sh"), "-m", "-O", str(out), "base", *paths],
                          cwd=tmp_path, capture_output=True, text=True, check=True)
    said = re.findall(r"^Value of (CONFIG_\w+) is redefined by fragment (\S+):$", proc.stdout, re.M)
    return (out / ".config").read_text(), said


def test_merging_writes_what_merge_config_sh_writes(scripts: Path, tmp_path: Path) -> None:
    expected, redefined = _merge_config_sh(scripts, tmp_path, BASE, FRAGMENTS)
    merged = merge_fragments(BASE, FRAGMENTS)
    assert merged.text == expected
    assert [(r.option, r.fragment) for r in merged.redefinitions] == redefined
    assert redefined == [("CONFIG_SMP", "one.config"), ("CONFIG_SLOB", "one.config"), ("CONFIG_SLUB", "one.config"),
                         ("CONFIG_LOCALVERSION", "two.config"), ("CONFIG_LOG_BUF_SHIFT", "two.config"),
                         ("CONFIG_NET", "two.config"), ("CONFIG_NET", "three.config")]


@pytest.mark.parametrize("order", [[0, 1, 2, 3], [3, 2, 1, 0], [2, 0], [1]])
def test_the_last_fragment_wins_as_with_merge_config_sh(scripts: Path, tmp_path: Path, order: list[int]) -> None:
    fragments = [FRAGMENTS[i] for i in order]
    expected, _ = _merge_config_sh(scripts, tmp_path, BASE, fragments)
    values = merge_fragments(BASE, fragments).values
    assert values == parse_config(expected)
    for option in ("CONFIG_NET", "CONFIG_SLOB", "CONFIG_LOCALVERSION"):
        setters = [f for f in fragments if option in parse_config(f.text)]
        if setters:
            assert values[option] == parse_config(setters[-1].text)[option]


def test_a_redefinition_names_both_values() -> None:
    merged = merge_fragments(BASE, FRAGMENTS[:1])
    assert str(merged.redefinitions[0]) == "CONFIG_SMP redefined by one.config: # CONFIG_SMP is not set -> CONFIG_SMP=y"


CONFIG_A = "CONFIG_64BIT=y\n# CONFIG_SMP is not set\nCONFIG_LOG_BUF_SHIFT=14\nCONFIG_SLOB=y\nCONFIG_OLD=m\n"
CONFIG_B = "CONFIG_64BIT=y\nCONFIG_SMP=y\nCONFIG_LOG_BUF_SHIFT=17\n# CONFIG_SLOB is not set\nCONFIG_SLUB=y\n" \
           "CONFIG_LOCALVERSION=\"-x\"\n# CONFIG_NEW is not set\n"


def test_config_differences_are_what_scripts_diffconfig_prints(scripts: Path, tmp_path: Path) -> None:
    (tmp_path / "a").write_text(CONFIG_A)
    (tmp_path / "b").write_text(CONFIG_B)
    for old, new in (("a", "b"), ("b", "a"), ("a", "a")):
        proc = subprocess.run(["python3", str(scripts / "diffconfig"), old, new], cwd=tmp_path,
                              capture_output=True, text=True, check=True)
        ours = diff_configs((tmp_path / old).read_text(), (tmp_path / new).read_text())
        assert ours.lines() == proc.stdout.splitlines()
        assert ours.count == len(proc.stdout.splitlines())
    assert diff_configs(CONFIG_A, CONFIG_B).count == 7


KCONFIG = {
    "Kconfig": 'mainmenu "test"\nsource "arch/$(SRCARCH)/Kconfig"\nsource "net/Kconfig"\n',
    "arch/x86/Kconfig": 'config 64BIT\n\tbool "64-bit"\n\nconfig ARCH_HAS_FOO\n\tdef_bool y\n\tselect GENERIC_X\n',
    "net/Kconfig": (
        'menuconfig NET\n\tbool "Networking"\n\thelp\n\t  depends on NOTHING in help text\n\n'
        'if NET\nconfig INET\n\tbool "TCP/IP"\n\nconfig IPV6\n\ttristate "IPv6" if EXPERT\n'
        '\tdepends on INET && (64BIT || SMP)\nendif\n\nconfig GENERIC_X\n\tbool\n\n'
        'menu "Drivers"\n\tdepends on PCI\nconfig VIRTIO_PCI\n\tbool "virtio"\nendmenu\n'
        'config NETBENCH\n\tbool "a benchmark"\n\tdepends on IPV6\n'
    ),
}


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    for name, text in KCONFIG.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path


def test_why_an_option_did_not_survive(tree: Path) -> None:
    final = parse_config("CONFIG_64BIT=y\nCONFIG_EXPERT=y\nCONFIG_ARCH_HAS_FOO=y\nCONFIG_GENERIC_X=y\n")
    asked = [Fragment("kbench", "CONFIG_IPV6=y\nCONFIG_VIRTIO_PCI=y\nCONFIG_64BIT=y\nCONFIG_NOPE=y\nCONFIG_NETBENCH=y\n"
                                "# CONFIG_GENERIC_X is not set\nCONFIG_GENERIC_X=y\n"),
             Fragment("mine.config", "# CONFIG_GENERIC_X is not set\n")]
    lost = {item.option: item for item in lost_options(asked, final, lambda: read_kconfig(tree))}
    assert set(lost) == {"CONFIG_IPV6", "CONFIG_VIRTIO_PCI", "CONFIG_NOPE", "CONFIG_GENERIC_X", "CONFIG_NETBENCH"}
    assert lost["CONFIG_IPV6"].why == "depends on NET && INET (not set: CONFIG_NET, CONFIG_INET)"
    assert lost["CONFIG_NETBENCH"].why == "depends on IPV6 (not set: CONFIG_IPV6); " \
                                         "CONFIG_IPV6 depends on NET && INET (not set: CONFIG_NET, CONFIG_INET)"
    assert lost["CONFIG_VIRTIO_PCI"].why == "depends on PCI (not set: CONFIG_PCI)"
    assert lost["CONFIG_NOPE"].why == "no such option in this tree"
    assert lost["CONFIG_GENERIC_X"].why == "selected by CONFIG_ARCH_HAS_FOO"
    assert lost["CONFIG_GENERIC_X"].fragment == "mine.config"  # the last fragment's ask is the one checked
    assert str(lost["CONFIG_NOPE"]) == "CONFIG_NOPE=y (from kbench) is not set: no such option in this tree"


def test_nothing_lost_reads_no_kconfig() -> None:
    final = parse_config("CONFIG_A=y\n# CONFIG_B is not set\n")
    asked = [Fragment("f", "CONFIG_A=y\nCONFIG_B=n\n# CONFIG_C is not set\n")]

    def unread() -> None:
        raise AssertionError("Kconfig read although nothing was lost")

    assert lost_options(asked, final, unread) == []  # type: ignore[arg-type]


def test_a_prompt_with_a_condition_is_a_dependency(tree: Path) -> None:
    final = parse_config("CONFIG_64BIT=y\nCONFIG_NET=y\nCONFIG_INET=y\n")
    assert explain_lost(read_kconfig(tree), "CONFIG_IPV6", "m", final) == "depends on EXPERT (not set: CONFIG_EXPERT)"


@pytest.mark.parametrize(("expression", "value"), [
    ("A && B", 1), ("A || C", 1), ("B || C", 2), ("!A", 1), ("!C", 2), ("C", 0), ("(A || C) && !D", 1),
    ("S = \"x y\"", 2), ("S != \"x y\"", 0), ("N >= 16", 2), ("N < 0x10", 0), ("A = m", 2), ("y", 2), ("n || m", 1),
])
def test_kconfig_expressions_are_tristate(expression: str, value: int) -> None:
    values = parse_config('CONFIG_A=m\nCONFIG_B=y\n# CONFIG_C is not set\nCONFIG_S="x y"\nCONFIG_N=16\n')
    assert evaluate(expression, values) == value
