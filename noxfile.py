"""Sessions: tests, lint (ruff), types (mypy strict on src), wheel (the built sdist and wheel,
and the wheel installed alone). Run all with ``uvx nox``.

Not default sessions: ``uvx nox -s stress`` runs the tamper corpus and the fuzzing at ten times
their default size; ``uvx nox -s benchmarks`` runs every script in benchmarks/ but
busy_suite.py, which runs ``uvx nox`` itself beside two CPU-bound processes (by hand:
``python benchmarks/busy_suite.py``), and byte_identity.py and commit_cost.py, which compare
two commits given by hand."""

from __future__ import annotations

import os
import shutil
import tomllib
from pathlib import Path

import nox

nox.options.default_venv_backend = "uv"
nox.options.sessions = ["tests", "lint", "types", "wheel"]
nox.options.reuse_existing_virtualenvs = True


def _sync(session: nox.Session, *groups: str, extras: tuple[str, ...] = ()) -> None:
    """Install the project, its locked dependencies and the given groups into the session."""
    args = ["uv", "sync", "--locked", "--no-default-groups"]
    args += [f"--group={g}" for g in groups] + [f"--extra={e}" for e in extras]
    session.run_install(*args, env={"UV_PROJECT_ENVIRONMENT": session.virtualenv.location})


#: Upstream CybORG's package at the CAGE-2 leaderboard's commit (see ../shared/cage2/README.md).
UPSTREAM_CYBORG = Path(__file__).parent.parent / "shared" / "cage2" / "upstream"
UPSTREAM_TARBALL = UPSTREAM_CYBORG / "CybORG-606813b.tar.gz"


def _upstream_cyborg(session: nox.Session) -> str | None:
    """A second environment, beside the session's, with upstream CybORG 2.1 at 606813b and the
    project: its Python, or None without ../shared/cage2/upstream.

    Upstream is installed as its README says, editable (``pip install -e``: its setup.py
    declares no package data, so a plain install leaves its version.txt and scenario files
    behind), from the tarball extracted once. It is a separate environment because the tests'
    environment has the csle-cyborg fork, and backend ``auto`` would prefer upstream there. Its
    dependencies (gym 0.26, paramiko, prettytable, docutils) come from PyPI, unpinned as
    upstream leaves them; the project's own are held to uv.lock's versions."""
    if not UPSTREAM_TARBALL.is_file():
        return None
    import tarfile

    root = Path(session.virtualenv.location).parent / "upstream-cyborg"
    source = root / "CybORG-606813b"
    if not (source / "setup.py").is_file():
        root.mkdir(parents=True, exist_ok=True)
        with tarfile.open(UPSTREAM_TARBALL) as archive:
            archive.extractall(root, filter="data")
    venv = root / "venv"
    python = venv / "bin" / "python"
    session.run_install(
        "uv",
        "venv",
        "--quiet",
        "--allow-existing",
        "--python",
        str(Path(session.virtualenv.location) / "bin" / "python"),
        str(venv),
    )
    constraints = root / "constraints.txt"
    session.run_install(
        "uv",
        "export",
        "--quiet",
        "--locked",
        "--no-default-groups",
        "--no-emit-project",
        "--no-hashes",
        "--extra=cyborg",
        "--output-file",
        str(constraints),
    )
    session.run_install(
        "uv",
        "pip",
        "install",
        "--quiet",
        "--python",
        str(python),
        "--constraint",
        str(constraints),
        "--editable",
        ".",
        "pyyaml",
        "--editable",
        str(source),
    )
    return str(python)


@nox.session
def tests(session: nox.Session) -> None:
    """The whole test suite: unit, property, CLI, end-to-end, tamper corpus, interop."""
    # gymnasium: the embedded simulator most tests' studies run on; dask: the tests that run
    # partitions on a local Dask cluster skip without distributed; inspect: tests/test_inspect.py
    # skips without inspect_ai.
    _sync(session, "test", extras=("gymnasium", "plot", "cyborg", "dask", "inspect"))
    # In CI the CAGE-2 tests, the inspect adapter's and the crate validator's must run, never
    # skip quietly for want of csle-cyborg, shared/, inspect_ai or roc-validator.
    env = {"REPRO_REQUIRE_CYBORG": "1", "REPRO_REQUIRE_EXTRAS": "1"} if os.environ.get("CI") else {}
    # The suite starts the command line, studies' workers and harnesses in fresh interpreters
    # again and again: each imports from the cache rather than compile all it imports.
    env.update(_bytecode_cached("tests"))
    upstream = _upstream_cyborg(session)
    if upstream is not None:  # tests/test_cyborg.py runs studies on upstream with it
        env["REPRO_UPSTREAM_PYTHON"] = upstream
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


#: The bundle shipped in the repository that the installed wheel verifies (see
#: tests/test_distribution.py).
SHIPPED_BUNDLE = Path(__file__).parent / "docs" / "examples" / "quick-start-bundle"


@nox.session(venv_backend="none")
def wheel(session: nox.Session) -> None:
    """Build the sdist and the wheel (``uv build``, the wheel from the sdist), check what each
    holds (tools/check_dist.py), install the wheel alone into a fresh environment with its
    dependencies at uv.lock's versions, and there run ``repro --version`` and ``repro verify``
    on the shipped bundle, from a directory outside the source tree. The wheel alone brings
    no simulator (gymnasium is an extra; tools/check_dist.py --installed fails if it is there):
    the bundle, a Gymnasium study, verifies without it."""
    here = Path(__file__).parent
    work = here / ".nox" / "wheel"
    shutil.rmtree(work, ignore_errors=True)  # fresh every time: nothing left from a run before
    dist, venv = work / "dist", work / "venv"
    session.run("uv", "build", "--quiet", "--out-dir", str(dist), str(here))
    session.run("uv", "venv", "--quiet", str(venv))
    python = str(venv / "bin" / "python")
    session.run(python, str(here / "tools" / "check_dist.py"), str(dist))
    constraints = work / "constraints.txt"
    session.run(
        "uv",
        "export",
        "--quiet",
        "--locked",
        "--no-default-groups",
        "--no-emit-project",
        "--no-hashes",
        "--output-file",
        str(constraints),
    )
    (built,) = dist.glob("*.whl")
    session.run(
        "uv",
        "pip",
        "install",
        "--quiet",
        "--python",
        python,
        "--constraint",
        str(constraints),
        str(built),
    )
    session.chdir(work)  # not the source tree, whose src/ must play no part
    env = {"PYTHONPATH": ""}
    session.run(python, str(here / "tools" / "check_dist.py"), "--installed", env=env)
    repro = str(venv / "bin" / "repro")
    printed = session.run(repro, "--version", env=env, silent=True)
    expected = tomllib.loads((here / "pyproject.toml").read_text("utf-8"))["project"]["version"]
    if printed != f"repro {expected}\n":
        session.error(f"repro --version printed {printed!r}, not 'repro {expected}'")
    session.log(f"repro --version: {str(printed).strip()}")
    session.run(repro, "verify", str(SHIPPED_BUNDLE), env=env)


@nox.session
def stress(session: nox.Session) -> None:
    """The tests marked ``stress`` with REPRO_STRESS=1: ten times as many tamper cases and
    fuzzing examples (the hundred clean bundles stay a hundred)."""
    _sync(session, "test", extras=("gymnasium", "plot", "cyborg"))
    session.run("pytest", "-m", "stress", *session.posargs, env={"REPRO_STRESS": "1"})


def _bytecode_cached(name: str) -> dict[str, str]:
    """The environment in which every process a session starts reads and writes byte-compiled
    modules in one cache of its own, ``.nox/<name>-pycache``, as an installed wheel has them,
    even where the environment says PYTHONDONTWRITEBYTECODE (which would make each start
    compile every module it imports again: here ``import repro.cli.app, repro.verify`` took
    0.25 s against 0.12 s from the cache, and a commit's extracted tree has no cache at
    all). Nothing is written in the source tree nor in the session's environment."""
    cache = Path(__file__).resolve().parent / ".nox" / f"{name}-pycache"
    return {"PYTHONDONTWRITEBYTECODE": "", "PYTHONPYCACHEPREFIX": str(cache)}


#: Scripts in benchmarks/ that the benchmarks session does not run (see there).
_BY_HAND = ("busy_suite.py", "byte_identity.py", "commit_cost.py")


@nox.session
def benchmarks(session: nox.Session) -> None:
    """Every script in benchmarks/ with its default sizes, one after another; each prints the
    ratios it measures (the CAGE-2 parts need ../shared/cage2). Minutes, on a quiet machine."""
    # The test group brings bagit.py; inspect_overhead.py needs inspect_ai.
    _sync(session, "test", extras=("gymnasium", "cyborg", "inspect"))
    for script in sorted(Path("benchmarks").glob("*.py")):
        # busy_suite.py runs nox itself (by hand, not inside nox); byte_identity.py and
        # commit_cost.py compare two commits (by hand, with --baseline: by default they would
        # compare this tree with itself); _*.py are their modules.
        if script.name in _BY_HAND or script.name.startswith("_"):
            continue
        session.run("python", str(script), env=_bytecode_cached("benchmarks"))
