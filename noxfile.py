"""Sessions: tests, lint (ruff), types (mypy strict on src). Run all with ``uvx nox``.

Not default sessions: ``uvx nox -s stress`` runs the tamper corpus and the fuzzing at ten times
their default size; ``uvx nox -s benchmarks`` runs every script in benchmarks/ but
busy_suite.py, which runs ``uvx nox`` itself beside two CPU-bound processes (by hand:
``python benchmarks/busy_suite.py``)."""

from __future__ import annotations

import os
from pathlib import Path

import nox

nox.options.default_venv_backend = "uv"
nox.options.sessions = ["tests", "lint", "types"]
nox.options.reuse_existing_virtualenvs = True


def _sync(session: nox.Session, *groups: str, extras: tuple[str, ...] = ()) -> None:
    """Install the project, its locked dependencies and the given groups into the session."""
    args = ["uv", "sync", "--locked", "--no-default-groups"]
    args += [f"--group={g}" for g in groups] + [f"--extra={e}" for e in extras]
    session.run_install(*args, env={"UV_PROJECT_ENVIRONMENT": session.virtualenv.location})


@nox.session
def tests(session: nox.Session) -> None:
    """The whole test suite: unit, property, CLI, end-to-end, tamper corpus, interop."""
    # dask: the tests that run partitions on a local Dask cluster skip without distributed.
    _sync(session, "test", extras=("plot", "cyborg", "dask"))
    # In CI the CAGE-2 tests must run, never skip quietly for want of csle-cyborg or shared/.
    env = {"REPRO_REQUIRE_CYBORG": "1"} if os.environ.get("CI") else {}
    session.run("pytest", *session.posargs, env=env)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff: lint and format check."""
    _sync(session, "lint")
    session.run("ruff", "check", "src", "tests", "tools", "benchmarks", "noxfile.py")
    session.run("ruff", "format", "--check", "src", "tests", "tools", "benchmarks", "noxfile.py")


@nox.session
def types(session: nox.Session) -> None:
    """mypy, strict, on src/ and tools/."""
    _sync(session, "types")
    session.run("mypy")


@nox.session
def stress(session: nox.Session) -> None:
    """The tests marked ``stress`` with REPRO_STRESS=1: ten times as many tamper cases and
    fuzzing examples (the hundred clean bundles stay a hundred)."""
    _sync(session, "test", extras=("plot", "cyborg"))
    session.run("pytest", "-m", "stress", *session.posargs, env={"REPRO_STRESS": "1"})


@nox.session
def benchmarks(session: nox.Session) -> None:
    """Every script in benchmarks/ with its default sizes, one after another; each prints the
    ratios it measures (the CAGE-2 parts need ../shared/cage2). Minutes, on a quiet machine."""
    _sync(session, "test", extras=("cyborg",))  # the test group brings bagit.py
    for script in sorted(Path("benchmarks").glob("*.py")):
        if script.name == "busy_suite.py":  # runs nox itself: by hand, not inside nox
            continue
        session.run("python", str(script))
