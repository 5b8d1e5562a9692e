"""kbench.extras: which extra a module belongs to, the check, and the install command named."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import pytest

from kbench import extras
from kbench.extras import EXTRAS, ExtraMissing, install_command, missing_from, require

PYPROJECT = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())


def test_every_extra_checked_is_declared_and_holds_the_module_it_is_known_by() -> None:
    declared = PYPROJECT["project"]["optional-dependencies"]
    for extra, modules in EXTRAS.items():
        distributions = " ".join(declared[extra]).lower()
        assert modules[0] in distributions, (extra, modules, declared[extra])
    assert "matplotlib" not in " ".join(PYPROJECT["project"]["dependencies"])


def test_the_install_command_is_pips_and_pipxs_in_a_pipx_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "prefix", str(tmp_path))
    assert install_command("web") == "pip install 'kbench-lab[web]'"
    (tmp_path / "pipx_metadata.json").write_text("{}\n")  # what pipx leaves in each of its environments
    assert install_command("web") == "pipx install --force 'kbench-lab[web]'"


def test_require_names_the_first_module_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    require("plots", "anything")  # the test environment has every extra
    monkeypatch.setitem(sys.modules, "uvicorn", None)  # what an import of a missing module meets
    with pytest.raises(ExtraMissing) as caught:
        require("web", "kbench serve")
    assert (caught.value.extra, caught.value.module) == ("web", "uvicorn")
    assert str(caught.value) == ("kbench serve needs kbench's [web] extra, which is not installed "
                                 "(no module 'uvicorn'): pip install 'kbench-lab[web]'")


def test_a_broken_package_counts_as_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(name: str) -> None:
        raise ValueError(f"{name}.__spec__ is None")

    monkeypatch.setattr(extras.importlib.util, "find_spec", broken)
    monkeypatch.delitem(sys.modules, "pyarrow", raising=False)  # one imported already is installed
    with pytest.raises(ExtraMissing, match=r"\[parquet\] extra"):
        require("parquet", "kbench export --format parquet", hint="or export --format csv")


@pytest.mark.parametrize(("module", "extra"), [
    ("matplotlib.pyplot", "plots"), ("fastapi", "web"), ("uvicorn.config", "web"), ("pyarrow.parquet", "parquet"),
    ("psycopg", "postgres"), ("celery", "fleet"), ("kombu.exceptions", "fleet"),
])
def test_an_import_error_of_an_extras_module_is_that_extra(module: str, extra: str) -> None:
    found = missing_from(ModuleNotFoundError(f"No module named {module!r}", name=module), "kbench x")
    assert found is not None and found.extra == extra and found.module == module.partition(".")[0]


def test_an_import_error_of_anything_else_is_not_an_extra() -> None:
    assert missing_from(ModuleNotFoundError("No module named 'yaml'", name="yaml"), "x") is None
    assert missing_from(ImportError("cannot import name 'x' from 'numpy'"), "x") is None  # no name: a bug


def test_exit_16_is_documented_where_the_codes_are() -> None:
    from kbench import exit_codes
    from kbench.cli.main import cli

    root = Path(__file__).resolve().parents[2]
    assert exit_codes.EXTRA_MISSING == 16
    assert "\n| 16 | an **optional part** of kbench" in (root / "docs" / "exit-codes.md").read_text()
    assert "16 an optional part this needs is not installed" in (cli.help or "")
