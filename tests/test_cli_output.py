"""What the command line prints, for a person and for a log: its version, every command's help
(with -h too) and exit codes, and install hints in the README's form.

Output that a pipe reads is tested through typer's CliRunner or a subprocess; output whose
terminal behaviour matters, through a pseudo-terminal as well."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from conftest import ROOT
from repro.adapters import cyborg
from repro.cli.app import EXITS, app
from repro.errors import BadInput, install_hint

runner = CliRunner()

SRC = ROOT / "src" / "repro"


def _commands(group: Any, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """The name path of every command and group under ``group``, typer's click group (the
    root's is ``()``); a group is what has ``commands``, whichever click typer uses."""
    yield prefix
    for name, command in sorted(group.commands.items()):
        if hasattr(command, "commands"):
            yield from _commands(command, (*prefix, name))
        else:
            yield (*prefix, name)


COMMANDS = list(_commands(typer.main.get_group(app)))


class TestVersionAndHelp:
    """``repro --version``, and -h or --help on every command."""

    def test_version(self) -> None:
        """``repro --version`` prints ``repro <version>`` (the installed distribution's) and
        exits 0, in a process of its own as a user runs it."""
        done = subprocess.run(
            [sys.executable, "-m", "repro", "--version"], capture_output=True, text=True
        )
        assert (done.returncode, done.stdout) == (
            0,
            f"repro {importlib.metadata.version('repro')}\n",
        )

    def test_every_command_is_walked(self) -> None:
        """The walk finds the commands the README lists, subcommands included."""
        names = {" ".join(c) for c in COMMANDS}
        assert {"study", "verify", "replay", "show", "protocol check", "protocol new"} <= names

    @pytest.mark.parametrize("flag", ["-h", "--help"])
    @pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "repro")
    def test_help_names_the_exit_codes(self, command: tuple[str, ...], flag: str) -> None:
        """Each command accepts -h and --help (exit 0), and its help has an "Exit codes"
        paragraph naming every code it can end with, with what each means there."""
        result = runner.invoke(app, [*command, flag], env={"COLUMNS": "100"})
        assert result.exit_code == 0, result.output
        text = " ".join(result.stdout.split())
        assert "Exit codes:" in text
        codes = EXITS[" ".join(command)]
        assert codes
        for code, meaning in codes:
            assert f"{code} {' '.join(meaning.split())}" in text, (code, text)


class TestInstallHints:
    """A missing optional package is named with the README's way to get its extra."""

    def test_the_hint_is_the_readmes_form(self) -> None:
        """install_hint words ``uv run --extra NAME repro ...``, the form README.md uses."""
        hint = install_hint("plot")
        assert "uv run --extra plot repro" in hint
        assert "uv run --extra plot repro" in (ROOT / "README.md").read_text("utf-8")

    def test_no_other_form_is_left_in_the_package(self) -> None:
        """No source file of the package words a hint as ``repro[extra]`` or ``pip install``:
        each goes through install_hint."""
        hits = [
            f"{path.relative_to(SRC)}:{n}"
            for path in sorted(SRC.rglob("*.py"))
            for n, line in enumerate(path.read_text("utf-8").splitlines(), start=1)
            if re.search(r"repro\[|pip install", line)
        ]
        assert hits == []

    def test_cyborg_without_a_backend(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """With neither CybORG nor csle-cyborg importable, the cyborg adapter's refusal names
        the cyborg extra's hint."""
        real = importlib.util.find_spec

        def find_spec(name: str, package: str | None = None) -> Any:
            return None if name in ("CybORG", "csle_cyborg") else real(name, package)

        monkeypatch.setattr(importlib.util, "find_spec", find_spec)
        with pytest.raises(BadInput, match=re.escape(install_hint("cyborg"))):
            cyborg.load_backend("auto")
