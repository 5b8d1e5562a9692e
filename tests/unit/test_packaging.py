"""The distribution declares what kbench imports, and nothing it does not."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
IMPORT_NAMES = {"pyyaml": "yaml", "sqlalchemy": "sqlalchemy", "psycopg": "psycopg", "celery": "celery"}
"""Distribution name -> the module it installs, where they differ (lower-case)."""


def _distribution(requirement: str) -> str:
    match = re.match(r"[A-Za-z0-9_.-]+", requirement)
    assert match, requirement
    return match.group(0).lower()


def _imported_top_level_modules() -> set[str]:
    found: set[str] = set()
    for path in (ROOT / "src" / "kbench").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                found.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return found


def test_every_required_dependency_is_imported_by_kbench() -> None:
    imported = _imported_top_level_modules()
    unused = [req for req in PYPROJECT["project"]["dependencies"]
              if IMPORT_NAMES.get(_distribution(req), _distribution(req)) not in imported]
    assert unused == []


@pytest.mark.parametrize("extra", ["postgres", "parquet", "fleet", "history", "web", "plots"])
def test_every_runtime_extra_is_imported_by_kbench(extra: str) -> None:
    imported = _imported_top_level_modules()
    for requirement in PYPROJECT["project"]["optional-dependencies"][extra]:
        name = _distribution(requirement)
        if name.startswith("kbench-lab"):
            continue
        module = IMPORT_NAMES.get(name, name)
        if module == "psycopg":  # SQLAlchemy loads it for postgresql+psycopg:// URLs
            assert any("postgresql+psycopg" in p.read_text() for p in (ROOT / "src/kbench").rglob("*.py"))
            continue
        if module == "jinja2":  # loaded by fastapi.templating.Jinja2Templates
            assert "Jinja2Templates" in (ROOT / "src/kbench/web/app.py").read_text()
            continue
        assert module in imported, f"kbench[{extra}] declares {requirement} but nothing imports {module}"


def test_heavy_optional_parts_are_not_required() -> None:
    required = {_distribution(req) for req in PYPROJECT["project"]["dependencies"]}
    # pydantic is required: `kbench import` validates other tools' files against its schemas
    assert not required & {"pyarrow", "psycopg", "celery", "fastapi", "plotly", "apache-otava", "matplotlib"}
    extras = PYPROJECT["project"]["optional-dependencies"]
    runtime = {_distribution(r) for name, reqs in extras.items() if name != "test" for r in reqs}
    assert not runtime & {"plotly", "apache-otava", "pytest", "mypy", "ruff", "playwright"}
    assert PYPROJECT["project"]["optional-dependencies"]["parquet"] == ["pyarrow>=14"]


def test_the_distribution_name_is_not_pypis_other_kbench_and_the_command_stays() -> None:
    assert PYPROJECT["project"]["name"] == "kbench-lab"
    assert PYPROJECT["project"]["scripts"] == {"kbench": "kbench.cli.main:main"}
    licence = (ROOT / "LICENSE").read_text()
    assert "GNU GENERAL PUBLIC LICENSE" in licence and "Version 2, June 1991" in licence
    assert PYPROJECT["project"]["license"] == "GPL-2.0-only" and PYPROJECT["project"]["license-files"] == ["LICENSE"]


def test_a_postgresql_url_without_its_driver_is_a_one_line_error_naming_the_extra() -> None:
    import subprocess

    code = ("import sys; sys.modules['psycopg'] = None\n"
            "sys.argv = ['kbench', '--db', 'postgresql+psycopg://kbench@127.0.0.1:1/x', 'results']\n"
            "from kbench.cli.main import main\n"
            "main()\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 16, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "kbench: error: the results database 'postgresql+psycopg://kbench@127.0.0.1:1/x' needs kbench's [postgres] "
        "extra, which is not installed (no module 'psycopg'): pip install 'kbench-lab[postgres]'"
    ]


def test_pip_check_is_clean_with_every_extra_installed() -> None:
    """`make test` installs kbench-lab[test], which holds every runtime extra: nothing it
    installed may have a broken requirement (apache-otava's pins once did)."""
    import subprocess

    extras = PYPROJECT["project"]["optional-dependencies"]
    test_extra = "".join(extras["test"])
    assert all(name in test_extra for name in ("postgres", "parquet", "fleet", "web", "plots")), test_extra
    proc = subprocess.run([sys.executable, "-m", "pip", "check"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_user_install_has_no_test_tools_and_make_test_installs_them() -> None:
    makefile = (ROOT / "Makefile").read_text()
    install = makefile.split("\ninstall:", 1)[1].split("\n\n", 1)[0]
    assert "'.[web,plots]'" in install and "test" not in install
    setup = makefile.split("\nsetup:", 1)[1].split("\n", 1)[0]
    assert "deps-run" in setup and "install" in setup and " deps " not in f" {setup} "
    assert makefile.split("\ntest:", 1)[1].split("\n", 1)[0].strip() == "install-test"
    assert "-e '.[test]'" in makefile.split("\ninstall-test:", 1)[1].split("\n\n", 1)[0]


def test_the_version_is_written_once_in_kbench_init() -> None:
    from kbench import __version__

    assert "version" not in PYPROJECT["project"] and PYPROJECT["project"]["dynamic"] == ["version"]
    assert PYPROJECT["tool"]["dynamic-metadata"] == [
        {"provider": "scikit_build_core.metadata.regex", "field": "version", "input": "src/kbench/__init__.py"}
    ]
    assert re.fullmatch(r"\d+\.\d+\.\d+", __version__)


def test_the_package_index_page_has_urls_classifiers_and_a_description_that_links_nowhere_relative() -> None:
    project = PYPROJECT["project"]
    assert set(project["urls"]) >= {"Homepage", "Source", "Issues", "Documentation"}
    assert all(url.startswith("https://") for url in project["urls"].values())
    assert "Operating System :: POSIX :: Linux" in project["classifiers"]
    assert "Programming Language :: Python :: 3.11" in project["classifiers"]
    assert not [c for c in project["classifiers"] if c.startswith("License ::")]  # the licence is an expression
    assert project["readme"] == {"file": "docs/package.md", "content-type": "text/markdown"}
    page = (ROOT / "docs" / "package.md").read_text()
    relative = [link for link in re.findall(r"\]\(([^)]+)\)", page) if not link.startswith("https://")]
    assert relative == []  # the index shows the page away from the repository
    assert "pipx install kbench-lab" in page and "pipx install kbench-lab" in (ROOT / "README.md").read_text()


def test_the_wheel_is_one_for_every_python_and_ci_builds_and_checks_it() -> None:
    assert PYPROJECT["tool"]["scikit-build"]["wheel"]["py-api"] == "py3"
    commands = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line.startswith("make ")]
    assert [line.split()[1] for line in commands] == ["setup", "dist-check", "test"]
    makefile = (ROOT / "Makefile").read_text()
    assert "scripts/dist.sh" in makefile.split("\ndist:", 1)[1].split("\n\n", 1)[0]
    assert "scripts/dist-check.sh" in makefile.split("\ndist-check: dist", 1)[1].split("\n\n", 1)[0]
