"""What the command line prints, for a person and for a log: its version, every command's help
(with -h too) and exit codes, no line wrapped when the output is not a terminal (rich's own
layout when it is), the study's progress naming each condition by its factors and participant,
the verify command a study prints working as printed however repro was started, and install
hints in the README's form.

Output that a pipe reads is tested through typer's CliRunner or a subprocess; output whose
terminal behaviour matters, through a pseudo-terminal as well."""

from __future__ import annotations

import fcntl
import importlib.metadata
import importlib.util
import inspect
import itertools
import json
import os
import pty
import re
import select
import shlex
import shutil
import struct
import subprocess
import sys
import termios
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from conftest import ROOT, SMALL, study_once
from repro._cli.app import app
from repro._cli.exits import EXITS
from repro._cli.output import fitted
from repro._cli.started import Started, command, started
from repro._execute.studies import prepare
from repro.adapters import _cyborg as cyborg
from repro.errors import BadInput, install_hint

runner = CliRunner()

SRC = ROOT / "src" / "repro"

#: A participant ID as long as the protocol allows, so that every line naming its condition is
#: longer than the 80 columns rich lays out a pipe in by default.
LONG_ID = "a-participant-whose-name-runs-on-well-past-eighty-columns-" + "x" * 6
#: One condition of two short episodes, whose label is long.
LONG: dict[str, Any] = {
    **SMALL,
    "id": "long-labels",
    "matrix": [
        {"name": "env_id", "levels": ["CartPole-v1"]},
        {"name": "max_episode_steps", "levels": [5]},
    ],
    "participants": [{"id": LONG_ID, "kind": "constant", "params": {"action": 0}}],
    "runs_per_condition": 2,
    "estimand": "mean-of-condition-means",
}
LABEL = f"env_id=CartPole-v1, max_episode_steps=5 / {LONG_ID}"
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")


def _env(**extra: str) -> dict[str, str]:
    """This process's environment for a child repro, without the variables that would set its
    console's width, and with this tree's repro first on its import path."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env["PYTHONPATH"] = os.pathsep.join([str(SRC.parent), env.get("PYTHONPATH", "")])
    return {**env, **extra}


def _piped(args: Sequence[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """``python -m repro ARGS`` with stdout and stderr on pipes."""
    return subprocess.run(
        [sys.executable, "-m", "repro", *args],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=300,
        **kwargs,
    )


def in_pty(
    args: Sequence[str],
    columns: int,
    env: Mapping[str, str] | None = None,
    styled: bool = True,
) -> tuple[int, str]:
    """Run ``python -m repro ARGS`` with stdin, stdout and stderr on a pseudo-terminal
    ``columns`` wide; its exit status and everything it wrote, with the terminal's escape
    sequences removed and its line ends made ``\\n``. The deadline only stops a hung child.
    ``styled``: the command prints through rich, so its output must hold escape sequences
    (proof that it saw a terminal)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    child = subprocess.Popen(
        [sys.executable, "-m", "repro", *args],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=dict(env or _env(TERM="xterm-256color")),
        close_fds=True,
    )
    os.close(slave)
    chunks = []
    try:
        while True:
            ready, _, _ = select.select([master], [], [], 300)
            if not ready:
                child.kill()
                raise AssertionError("the child wrote nothing for 300 s")
            try:
                data = os.read(master, 1 << 16)
            except OSError:  # EIO: the child has closed the terminal
                break
            if not data:
                break
            chunks.append(data)
    finally:
        os.close(master)
    status = child.wait(timeout=300)
    raw = b"".join(chunks).decode("utf-8", "replace")
    if styled:
        assert "\x1b[" in raw, "a terminal's output has escape sequences (colour, cursor)"
    return status, _ANSI.sub("", raw).replace("\r\n", "\n")


@pytest.fixture(scope="module")
def long_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real bundle of :data:`LONG`, made once; copy it before changing it."""
    return study_once(tmp_path_factory, "long-labels", LONG)


def _commands(group: Any, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """The name path of every command and group under ``group``, typer's click group (the
    root's is ``()``); a group is what has ``commands``, whichever click typer uses."""
    yield prefix
    for name, sub in sorted(group.commands.items()):
        if hasattr(sub, "commands"):
            yield from _commands(sub, (*prefix, name))
        else:
            yield (*prefix, name)


COMMANDS = list(_commands(typer.main.get_group(app)))


class TestVersionAndHelp:
    """``repro --version``, and -h or --help on every command."""

    @pytest.mark.slow
    def test_version(self) -> None:
        """``repro --version`` prints ``repro <version>`` (the installed distribution's) and
        exits 0, in a process of its own as a user runs it."""
        done = subprocess.run(
            [sys.executable, "-m", "repro", "--version"], capture_output=True, text=True
        )
        assert (done.returncode, done.stdout) == (
            0,
            f"repro {importlib.metadata.version('repro-evidence')}\n",
        )

    def test_every_command_is_walked(self) -> None:
        """The walk finds the commands docs/commands.md describes, subcommands included."""
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

    @pytest.mark.slow
    @pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "repro")
    def test_help_breaks_no_sentence_at_80_columns(self, command: tuple[str, ...]) -> None:
        """At 80 columns a help text's line ends only where its next word would not fit (rich's
        wrapping), never mid-sentence where the source happened to break: in the description
        and in every panel (commands, arguments, options), each line continued by the next
        reaches the right edge but for less than the next word (typer's own ``[required]``
        and ``[default: ...]`` notes aside); and the commands panel shows each command's
        first sentence whole."""
        result = runner.invoke(app, [*command, "--help"], env={"COLUMNS": "80"})
        assert result.exit_code == 0, result.output
        lines = result.stdout.splitlines()
        assert max(len(x) for x in lines) <= 80
        for line, after in itertools.pairwise(lines):
            boxed = line.startswith("\u2502") and after.startswith("\u2502")
            plain = line.strip() and after.strip() and not line.startswith(("\u2502", "\u2570"))
            plain = plain and not after.startswith(("\u2502", "\u256d"))
            if boxed:
                # A continuation line leaves the first columns of its panel blank (an item
                # starts with its name, an option with its flag or its required mark).
                text = after.strip("\u2502 ")
                if after[2] != " " or not text or text.startswith(("-", "*")):
                    continue
                if line.strip("\u2502 ").startswith("["):
                    continue
                end = len(line.rstrip().removesuffix("\u2502").rstrip())
                word = after.strip("\u2502 ").split()[0]
                edge = 78
            elif plain:
                end = len(line.rstrip())
                word = after.split()[0]
                edge = 79
            else:
                continue
            if word.startswith("["):
                continue
            assert end + 1 + len(word) > edge - 2, (line, after)


class TestInstallHints:
    """A missing optional package is named with the README's way to get its extra."""

    def test_the_hint_is_the_readmes_form(self) -> None:
        """install_hint words ``pip install 'repro-evidence[NAME]'`` and, from a clone,
        ``uv run --extra NAME repro ...``, the forms README.md uses."""
        readme = (ROOT / "README.md").read_text("utf-8")
        pip = "pip install 'repro-evidence[gymnasium]'"
        assert pip in install_hint("gymnasium") and pip in readme
        uv = "uv run --extra plot repro"
        assert uv in install_hint("plot") and uv in readme

    def test_no_other_form_is_left_in_the_package(self) -> None:
        """No source file of the package words a hint as ``repro[extra]``,
        ``repro-evidence[extra]`` or ``pip install`` but install_hint itself: each goes through
        it."""
        lines, first = inspect.getsourcelines(install_hint)
        own = {f"errors.py:{n}" for n in range(first, first + len(lines))}
        hits = [
            f"{path.relative_to(SRC)}:{n}"
            for path in sorted(SRC.rglob("*.py"))
            for n, line in enumerate(path.read_text("utf-8").splitlines(), start=1)
            if re.search(r"repro(-evidence)?\[|pip install", line)
        ]
        assert hits and set(hits) <= own, hits

    def test_cyborg_without_a_backend(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """With neither CybORG nor csle-cyborg importable, the cyborg adapter's refusal names
        the cyborg extra's hint."""
        real = importlib.util.find_spec

        def find_spec(name: str, package: str | None = None) -> Any:
            return None if name in ("CybORG", "csle_cyborg") else real(name, package)

        monkeypatch.setattr(importlib.util, "find_spec", find_spec)
        with pytest.raises(BadInput, match=re.escape(install_hint("cyborg"))):
            cyborg.load_backend("auto")

    def test_inspect_without_inspect_ai(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """With inspect_ai not importable, a study of the inspect example is refused naming
        the inspect extra's hint and the adapter's JSON path."""
        real = importlib.util.find_spec

        def find_spec(name: str, package: str | None = None) -> Any:
            return None if name == "inspect_ai" else real(name, package)

        monkeypatch.setattr(importlib.util, "find_spec", find_spec)
        with pytest.raises(BadInput, match=re.escape(install_hint("inspect"))) as refused:
            prepare(ROOT / "protocols" / "inspect-arithmetic.json", {})
        assert str(refused.value).endswith("@ $.adapter.name")


@pytest.mark.slow
class TestNoWrapOffTerminal:
    """Output to a pipe, a file or a log is never wrapped, tables included; on a terminal rich
    lays it out to the terminal's width as before."""

    def test_study_end_line_is_whole_in_a_pipe(self, tmp_path: Path) -> None:
        """The study's summary line (estimand and reproduction class) is one line, longer
        than 80 columns."""
        protocol = tmp_path / "long.json"
        protocol.write_text(json.dumps(LONG), "utf-8")
        done = _piped(["study", str(protocol), "--out", str(tmp_path / "b")])
        assert done.returncode == 0, done.stderr
        line = next(x for x in done.stderr.splitlines() if x.startswith("done in "))
        assert line.endswith("; reproduction unavailable") and len(line) > 80, line

    def test_findings_are_whole_in_a_pipe(self, long_bundle: Path, tmp_path: Path) -> None:
        """Each finding of a tampered bundle is one FAIL line, and the last one says how many
        there were: no line is a piece of another."""
        copy = tmp_path / "copy"
        shutil.copytree(long_bundle, copy)
        path = copy / "data" / "aggregates.json"
        path.write_bytes(path.read_bytes().replace(b'"valid":2', b'"valid":1', 1))
        done = _piped(["verify", str(copy)])
        assert done.returncode == 1
        lines = done.stderr.splitlines()
        assert lines[-1].endswith(f"finding(s): {copy} does not verify"), lines
        assert lines[:-1] and all(x.startswith("FAIL ") for x in lines[:-1]), lines
        assert max(len(x) for x in lines) > 80

    def test_a_long_condition_label_stays_on_one_line_in_a_pipe(self, long_bundle: Path) -> None:
        """``repro show`` to a pipe: the conditions table's row holds the whole label."""
        done = _piped(["show", str(long_bundle)])
        assert done.returncode == 0, done.stderr
        row = next(x for x in done.stdout.splitlines() if "c00" in x and "CartPole" in x)
        assert LABEL in row and len(row) > 80

    def test_tier_reasons_stay_whole_in_a_pipe(self, published_bundle: Path) -> None:
        """``repro show`` to a pipe: each tier's reason, and the reproduction class's, is on
        one line."""
        done = _piped(["show", str(published_bundle)])
        assert done.returncode == 0, done.stderr
        lines = done.stdout.splitlines()
        tiers = json.loads((published_bundle / "data" / "tiers.json").read_text("utf-8"))
        reasons = [t["reason"] for t in tiers["tiers"] if t["reason"]]
        assert reasons
        for reason in [*reasons, tiers["reproduction"]["reason"]]:
            assert any(reason in x for x in lines), reason

    def test_a_terminal_is_laid_out_to_its_width(self, long_bundle: Path) -> None:
        """``repro show`` on a terminal 60 columns wide: every line fits in them, the label is
        folded into its cell, and the tables are all there."""
        status, text = in_pty(["show", str(long_bundle)], columns=60)
        assert status == 0, text
        lines = text.splitlines()
        assert max(len(x) for x in lines) <= 60, text
        assert not any(LABEL in x for x in lines)
        for token in ("c00", "CartPole-v1", "reproduction: unavailable", "execution-control"):
            assert token in text, token


class TestProseOnATerminal:
    """A sentence the command line prints without rich (``emit(..., prose=True)``) is broken
    between words on a terminal narrower than it, and printed whole anywhere else."""

    LINE = (
        "OK: /a/bundle is a valid BagIt 1.0 bag (declaration, manifests, completeness, every "
        "digest, fetch.txt, Payload-Oxum)"
    )

    def test_fitted_breaks_between_words_only(self) -> None:
        """Each line fits in 80 columns, each after the first is indented by two, and the words
        are the line's words, in order, none cut."""
        lines = fitted(self.LINE, 80).split("\n")
        assert len(lines) == 2 and all(len(x) <= 80 for x in lines), lines
        assert all(x.startswith("  ") for x in lines[1:]), lines
        assert " ".join(lines).split() == self.LINE.split()

    def test_fitted_keeps_what_fits_and_long_words(self) -> None:
        """A line that fits is kept as it is, leading spaces too; a word longer than the line
        (a path, a digest) is never cut; below 20 columns nothing is broken."""
        assert fitted("  short line\nand another", 80) == "  short line\nand another"
        digest = "f" * 64
        assert fitted(f"bundle {digest} ok", 30).split("\n") == ["bundle", f"  {digest}", "  ok"]
        assert fitted(self.LINE, 19) == self.LINE

    @pytest.mark.slow  # Slow: two fresh interpreters.
    def test_bagit_only_at_80_columns(self, small_bundle: Path) -> None:
        """``repro verify --bagit-only`` on a terminal 80 columns wide: its OK line, longer than
        80, comes out on lines of at most 80 with every word whole; to a pipe, on one line."""
        status, text = in_pty(["verify", "--bagit-only", str(small_bundle)], 80, styled=False)
        assert status == 0, text
        lines = [x for x in text.splitlines() if x]
        assert len(lines) > 1 and max(len(x) for x in lines) <= 80, text
        piped = _piped(["verify", "--bagit-only", str(small_bundle)])
        assert piped.returncode == 0, piped.stderr
        (whole,) = piped.stdout.splitlines()
        assert len(whole) > 80 and " ".join(lines).split() == whole.split()


#: The small protocol, two runs per condition: four conditions, eight slots.
TWO_RUNS: dict[str, Any] = {**SMALL, "runs_per_condition": 2}
SMALL_LABELS = [
    "c00 env_id=CartPole-v1 / random",
    "c01 env_id=CartPole-v1 / push-left",
    "c02 env_id=MountainCar-v0 / random",
    "c03 env_id=MountainCar-v0 / push-left",
]


@pytest.mark.slow
class TestProgress:
    """The study's progress names the condition by its ID, factor levels and participant, the
    label the tables give it."""

    def test_lines_name_each_condition(self, tmp_path: Path) -> None:
        """Off a terminal, a progress line per tenth of the work (here each of the eight
        slots) ends with the label of the condition whose slot ended."""
        protocol = tmp_path / "p.json"
        protocol.write_text(json.dumps(TWO_RUNS), "utf-8")
        result = runner.invoke(app, ["study", str(protocol), "--out", str(tmp_path / "b")])
        assert result.exit_code == 0, result.output
        lines = [x for x in result.stderr.splitlines() if re.match(r"study: \d+/8 runs", x)]
        assert len(lines) == 8
        for n, line in enumerate(lines):
            assert line.endswith(f"({SMALL_LABELS[n // 2]})"), line

    def test_the_bar_names_the_condition(self, tmp_path: Path) -> None:
        """On a terminal, the progress bar's description is the condition's label (the last,
        once the study is done); the study still ends with its summary line."""
        protocol = tmp_path / "p.json"
        protocol.write_text(json.dumps(TWO_RUNS), "utf-8")
        status, text = in_pty(["study", str(protocol), "--out", str(tmp_path / "b")], 160)
        assert status == 0, text
        assert SMALL_LABELS[-1] in text, text
        assert "study: " not in text  # no plain progress lines on a terminal
        assert "reproduction unavailable" in text

    def test_at_80_columns_the_bar_cuts_the_label_never_counts_or_times(
        self, tmp_path: Path
    ) -> None:
        """On a terminal 80 columns wide, a condition whose label is longer than the line: the
        bar's last frame has the counts (runs done of all, and those not valid) and both times
        whole, and its label cut with an ellipsis; no line is past 80 columns. (Its 3 slots all
        fail, which is no reason to stop early in a plan of 3, and it accepts its losses.)"""
        from test_losses import BROKEN

        protocol = tmp_path / "p.json"
        broken = {**BROKEN["participants"][1], "id": LONG_ID}
        long = {**BROKEN, "participants": [broken], "runs_per_condition": 3}
        protocol.write_text(json.dumps(long), "utf-8")
        tests = str(ROOT / "tests")
        env = _env(TERM="xterm-256color")
        env["PYTHONPATH"] = os.pathsep.join([env["PYTHONPATH"], tests])
        study = ["study", str(protocol), "--out", str(tmp_path / "b"), "--accept-losses"]
        status, text = in_pty(study, 80, env)
        assert status == 0, text
        # The bar redraws its line in place: its frames are what is between the cursor moves.
        frames = [f for x in text.splitlines() for f in x.split("\r") if " eta " in f]
        assert frames, text
        last = frames[-1]
        assert len(last) <= 80, last
        assert re.search(r" 3/3 3 not valid \d+:\d\d:\d\d eta \d+:\d\d:\d\d$", last), last
        assert last.startswith("c00 env_id=CartPole-v1 / a"), last
        assert "\u2026" in last and LONG_ID not in last, last


def _started(**facts: Any) -> Started:
    """A console script on PATH, outside uv, unless ``facts`` say otherwise."""
    base: dict[str, Any] = {
        "argv0": "/home/u/.local/bin/repro",
        "executable": "/home/u/.local/share/uv/tools/repro/bin/python3",
        "main_module": None,
        "cwd": "/home/u/work",
        "which_repro": "/home/u/.local/bin/repro",
        "which_python": "/usr/bin/python3",
        "under_uv": False,
        "uv_project": None,
    }
    return Started(**{**base, **facts})


_MODULE = {"argv0": "/c/src/repro/__main__.py", "main_module": "repro.__main__"}
_UV_RUN = {
    "argv0": "/c/.venv/bin/repro",
    "executable": "/c/.venv/bin/python3",
    "which_repro": "/c/.venv/bin/repro",  # uv run puts the environment first on PATH
    "under_uv": True,
    "uv_project": "/c",
    "cwd": "/c",
}

#: (what the case is, the facts, the command printed for ``verify my-bundle``)
STARTS: list[tuple[str, dict[str, Any], str]] = [
    ("console script on PATH", {}, "repro verify my-bundle"),
    ("console script not on PATH", {"which_repro": None},
     "/home/u/.local/bin/repro verify my-bundle"),
    ("another repro first on PATH", {"which_repro": "/usr/bin/repro"},
     "/home/u/.local/bin/repro verify my-bundle"),
    ("console script by a relative path", {"argv0": "bin/repro", "cwd": "/w",
                                           "which_repro": None}, "/w/bin/repro verify my-bundle"),
    ("relative path that PATH finds too",
     {"argv0": "bin/repro", "cwd": "/w", "which_repro": "/w/bin/repro"}, "repro verify my-bundle"),
    ("uv run in the project", _UV_RUN, "uv run repro verify my-bundle"),
    ("uv run in a subdirectory", {**_UV_RUN, "cwd": "/c/studies"},
     "uv run repro verify my-bundle"),
    ("uv run --project from outside", {**_UV_RUN, "cwd": "/elsewhere"},
     "uv run --project /c repro verify my-bundle"),
    ("uv run python -m repro", {**_UV_RUN, **_MODULE}, "uv run repro verify my-bundle"),
    ("uvx: no project", {**_UV_RUN, "uv_project": None, "argv0": "/cache/uv/env/bin/repro"},
     "/cache/uv/env/bin/repro verify my-bundle"),
    ("python -m repro, its python on PATH",
     {**_MODULE, "executable": "/usr/bin/python3", "which_python": "/usr/bin/python3"},
     "python3 -m repro verify my-bundle"),
    ("python -m repro, another python on PATH",
     {**_MODULE, "executable": "/v/bin/python3", "which_python": "/usr/bin/python3"},
     "/v/bin/python3 -m repro verify my-bundle"),
    ("started some other way", {"argv0": "/v/bin/pytest", "executable": "/v/bin/python3",
                                "which_python": None}, "/v/bin/python3 -m repro verify my-bundle"),
]  # fmt: skip


@pytest.mark.slow
class TestVerifyCommand:
    """The command a study prints last verifies its bundle as printed, in the shell repro was
    started from."""

    @pytest.mark.parametrize(("case", "facts", "printed"), STARTS, ids=[c[0] for c in STARTS])
    def test_worded_for_how_repro_was_started(
        self, case: str, facts: dict[str, Any], printed: str
    ) -> None:
        """Each way of starting repro gets the command that works from its shell."""
        assert command(["verify", "my-bundle"], _started(**facts)) == printed, case

    def test_paths_are_quoted_for_a_shell(self) -> None:
        """A path with spaces or quotes is quoted (shlex), the script's too."""
        how = _started(argv0="/my tools/repro", which_repro=None)
        assert command(["verify", "it's mine"], how) == (
            "'/my tools/repro' verify 'it'\"'\"'s mine'"
        )

    def test_started_reads_this_process(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """started() reads argv, the interpreter, PATH and uv's variable of this process."""
        monkeypatch.setattr(sys, "argv", ["/nowhere/bin/repro", "study"])
        how = started({"UV_RUN_RECURSION_DEPTH": "1"})
        assert (how.argv0, how.executable, how.under_uv) == (
            "/nowhere/bin/repro",
            sys.executable,
            True,
        )
        assert how.which_repro == shutil.which("repro")
        assert started({}).under_uv is False

    def _study_then_run_what_it_printed(
        self, tmp_path: Path, start: Sequence[str], env: dict[str, str]
    ) -> str:
        """Run a study started as ``start`` (in ``tmp_path``), then its last line with a shell
        in the same directory and environment; return that line."""
        protocol = tmp_path / "p.json"
        protocol.write_text(json.dumps(TWO_RUNS), "utf-8")
        done = subprocess.run(
            [*start, "study", str(protocol), "--out", "my bundle"],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=env,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        printed = done.stdout.splitlines()[-1]
        check = subprocess.run(
            ["sh", "-c", printed], capture_output=True, text=True, cwd=tmp_path, env=env
        )
        assert check.returncode == 0, (printed, check.stdout, check.stderr)
        assert check.stdout.startswith("OK: my bundle verifies")
        return printed

    def test_python_m_repro(self, tmp_path: Path) -> None:
        """Started as ``python -m repro`` (the interpreter by its absolute path), the printed
        command verifies, as printed, with a shell."""
        printed = self._study_then_run_what_it_printed(
            tmp_path, [sys.executable, "-m", "repro"], _env()
        )
        assert printed.endswith(" -m repro verify 'my bundle'")

    @pytest.fixture
    def script(self) -> Path:
        """This environment's ``repro`` console script."""
        path = Path(sys.executable).parent / "repro"
        if not path.is_file():
            pytest.skip("repro's console script is not installed beside this interpreter")
        return path

    def test_console_script_off_path(self, tmp_path: Path, script: Path) -> None:
        """Started by the script's path, with no repro on PATH (as after ``uv run``, whose
        PATH the shell does not keep), the printed command is that path and verifies."""
        env = _env(PATH=os.defpath)
        printed = self._study_then_run_what_it_printed(tmp_path, [str(script)], env)
        assert printed == f"{shlex.quote(str(script))} verify 'my bundle'"

    def test_console_script_on_path(self, tmp_path: Path, script: Path) -> None:
        """Started as ``repro`` found on PATH, the printed command is ``repro verify DIR``,
        which that PATH runs."""
        env = _env(PATH=os.pathsep.join([str(script.parent), os.defpath]))
        printed = self._study_then_run_what_it_printed(tmp_path, ["repro"], env)
        assert printed == "repro verify 'my bundle'"

    def test_under_uv_without_a_project(self, tmp_path: Path, script: Path) -> None:
        """Under uv (its variable set) with no project around the environment, as ``uvx``
        runs repro, the printed command names the running script by its path and verifies
        from a shell without that environment on PATH."""
        env = _env(PATH=os.pathsep.join([str(script.parent), os.defpath]))
        env["UV_RUN_RECURSION_DEPTH"] = "1"
        printed = self._study_then_run_what_it_printed(tmp_path, ["repro"], env)
        assert printed == f"{shlex.quote(str(script))} verify 'my bundle'"
