"""The lazily loaded commands: each registry entry names a real command with the same help."""

from __future__ import annotations

import click
import pytest

from kbench.cli.bisect_cmd import bisect_group
from kbench.cli.lazy import LazyCommand, LazyGroup
from kbench.cli.main import COMMANDS, cli

REGISTRIES = [(name, entry) for name, entry in COMMANDS.items()] + [
    (f"bisect {name}", entry) for name, entry in bisect_group.lazy.items()  # type: ignore[attr-defined]
]


@pytest.mark.parametrize(("name", "entry"), REGISTRIES, ids=[name for name, _ in REGISTRIES])
def test_registry_entry_is_the_command_it_names(name: str, entry: LazyCommand) -> None:
    command = entry.load()
    assert command.name == name.split()[-1]
    assert entry.short_help(1000) == command.get_short_help_str(1000)
    assert entry.short_help(40) == command.get_short_help_str(40)


def test_top_level_help_lists_every_command_as_its_own_help_would() -> None:
    ctx = click.Context(cli, info_name="kbench")
    lazy_help = cli.get_help(ctx)
    loaded = LazyGroup(name="kbench", lazy={})
    for name, entry in COMMANDS.items():
        loaded.add_command(entry.load(), name)
    eager_help = click.Group.get_help(loaded, click.Context(loaded, info_name="kbench"))
    listing = lazy_help[lazy_help.index("Commands:") :]
    assert listing == eager_help[eager_help.index("Commands:") :]
    assert all(f"  {name} " in listing for name in COMMANDS)


def test_a_command_module_is_imported_only_when_its_command_is_asked_for() -> None:
    group = LazyGroup(name="g", lazy={"x": LazyCommand("kbench.cli.no_such_module:cmd", "Does x.")})
    ctx = click.Context(group, info_name="g")
    assert "Does x." in group.get_help(ctx)
    with pytest.raises(ModuleNotFoundError):
        group.get_command(ctx, "x")
