"""What the command line prints, for a person and for a log: install hints in the README's form.

Output that a pipe reads is tested through typer's CliRunner or a subprocess; output whose
terminal behaviour matters, through a pseudo-terminal as well."""

from __future__ import annotations

import importlib.util
import re
from typing import Any

import pytest

from conftest import ROOT
from repro.adapters import cyborg
from repro.errors import BadInput, install_hint

SRC = ROOT / "src" / "repro"


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
