"""kbench.ko's benchmarks read from its sources: benches/list.h and one file per benchmark."""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kbench.kinds.kfunc.catalog import COMMON_PARAMS, kfunc_benchmarks
from kbench.kinds.kfunc.source import KmodSourceError, builtin_benches, read_bench
from kbench.resources import find_resource

REPO = Path(__file__).resolve().parents[2]
NEW_BENCH = REPO / "tests" / "data" / "kmod" / "xor_sum.c"

SYNTHETIC = r"""
// SPDX-License-Identifier: GPL-2.0
#include "benches.h"

enum { P_ADDR, P_NET6, P_SIZE };

/* a comment with .name = "decoy" in it */
static struct kbench_param synth_params[] = {
	[P_ADDR] = {
		.name = "addr",
		.description = "an IPv4 prefix",
		.type = KBENCH_PARAM_IPV4_PREFIX,
		.value.ipv4 = { .addr = htonl(0xc0a80000), .plen = 16 },
	},
	[P_NET6] = {
		.name = "net6",
		.description = "an \"IPv6\" prefix",
		.type = KBENCH_PARAM_IPV6_PREFIX,
		.value.ipv6 = {
			.addr.s6_addr = { 0xfd, 0x00, 0x00, 0x01 },
			.plen = 48,
		},
	},
	[P_SIZE] = {
		.name = "size",
		.description = "bytes",
		.type = KBENCH_PARAM_U64,
		.min = 0x10,
		.max = (1 << 20) + 3 * 2,
		.value.u64 = 64U,
	},
};

struct kbench kbench_synth = {
	.name = "synth",
	.description = "one description "
		"in two parts",
	.params = synth_params,
	.nr_params = ARRAY_SIZE(synth_params),
	.call = synth_call,
};
"""


def test_every_initializer_form_is_read(tmp_path: Path) -> None:
    path = tmp_path / "synth.c"
    path.write_text(SYNTHETIC)
    bench = read_bench(path, "synth")
    assert bench.description == "one description in two parts"
    addr, net6, size = bench.params
    assert (addr.name, addr.type, addr.description) == ("addr", "ipv4", "an IPv4 prefix")
    assert addr.default == str(ipaddress.ip_network("192.168.0.0/16"))
    assert net6.description == 'an "IPv6" prefix'
    assert net6.default == str(ipaddress.ip_network("fd00:1::/48"))
    assert (size.default, size.min, size.max) == (str(64), 16, 2**20 + 6)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ('.value.u64 = 64U', ".value.u64 = SIZE_DEFAULT"),
        ('.name = "synth"', '.name = "other"'),
        ('.type = KBENCH_PARAM_U64', ".type = 7"),
        ('.description = "bytes"', ".description = BYTES_TEXT"),
    ],
)
def test_a_form_that_cannot_be_read_is_an_error_naming_file_and_field(
    tmp_path: Path, change: str, message: str
) -> None:
    path = tmp_path / "synth.c"
    path.write_text(SYNTHETIC.replace(change, message))
    with pytest.raises(KmodSourceError) as error:
        read_bench(path, "synth")
    assert str(path) in str(error.value)


def test_a_listed_benchmark_without_its_file_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "benches").mkdir()
    (tmp_path / "benches" / "list.h").write_text("KBENCH_BUILTIN(missing);\n")
    with pytest.raises(KmodSourceError, match=r"missing\.c.*list\.h names missing"):
        builtin_benches(tmp_path)


def test_the_tree_lists_every_bench_file_and_each_file_defines_its_bench() -> None:
    kmod = find_resource("kmod")
    benches = builtin_benches(kmod)
    files = {path.stem for path in (kmod / "benches").glob("*.c")}
    assert sorted(bench.name for bench in benches) == sorted(files)


def test_catalog_is_the_module_table_plus_the_common_parameters() -> None:
    for bench, source in zip(kfunc_benchmarks(), builtin_benches(find_resource("kmod")), strict=True):
        assert bench.name == f"kfunc.{source.name}" and bench.description == source.description
        assert bench.params[len(source.params) :] == COMMON_PARAMS
        assert [p.default for p in bench.params[: len(source.params)]] == [p.default for p in source.params]


def test_a_new_benchmark_is_one_file_and_one_line(tmp_path: Path) -> None:
    kmod = tmp_path / "kmod"
    shutil.copytree(find_resource("kmod"), kmod)
    shutil.copy(NEW_BENCH, kmod / "benches" / NEW_BENCH.name)
    listing = kmod / "benches" / "list.h"
    listing.write_text(listing.read_text().replace(
        "/* Add a new benchmark here. */", "KBENCH_BUILTIN(xor_sum);\n/* Add a new benchmark here. */"
    ))
    env = dict(os.environ, KBENCH_KMOD_DIR=str(kmod))
    listed = subprocess.run(
        [sys.executable, "-m", "kbench.cli", "list", "--json"], capture_output=True, text=True, env=env, check=True
    )
    found = {entry["name"]: entry for entry in json.loads(listed.stdout)}
    new = found["kfunc.xor_sum"]
    assert new["description"] == "xor of `words` consecutive dataset values"
    assert new["params"][0] == {
        "name": "words", "type": "int", "default": "8", "description": "dataset values per call"
    }
    # and Kbuild builds exactly the listed files
    made = subprocess.run(
        ["make", "-n", "-f", "-", f"src={kmod}", "print"], input=(kmod / "Kbuild").read_text()
        + "\nprint:\n\t@echo $(kbench-y)\n", capture_output=True, text=True, cwd=kmod, check=True,
    )
    objects = made.stdout.split()
    assert "benches/xor_sum.o" in objects
    assert sorted(o for o in objects if o.startswith("benches/")) == sorted(
        f"benches/{p.stem}.o" for p in (kmod / "benches").glob("*.c")
    )
