"""Sessions: tests, lint (ruff, lint-imports), types (mypy strict on src), wheel (the built sdist
and wheel, and the wheel installed alone), compat (bundles made under the oldest declared numerical
libraries verified under uv.lock's, and the other way round). Run all with ``uvx nox``.

Not default sessions: ``uvx nox -s quick`` runs the tests not marked ``slow``, the unit and
property tests, in about two minutes (the inner loop); ``uvx nox -s stress`` runs the tamper
corpus and the fuzzing at ten times their default size; ``uvx nox -s benchmarks`` runs every
script in benchmarks/ but busy_suite.py, which runs ``uvx nox`` itself beside two CPU-bound
processes (by hand: ``python benchmarks/busy_suite.py``), and byte_identity.py and
commit_cost.py, which compare two commits given by hand."""

from __future__ import annotations

import collections
import json
import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import nox

nox.options.default_venv_backend = "uv"
nox.options.sessions = ["tests", "lint", "types", "wheel", "compat"]
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


#: The extras the tests and the quick tier install (each test of an absent extra would skip).
TEST_EXTRAS = ("gymnasium", "plot", "cyborg", "dask", "inspect")


@nox.session
def tests(session: nox.Session) -> None:
    """The whole test suite: unit, property, CLI, end-to-end, tamper corpus, interop."""
    # gymnasium: the embedded simulator most tests' studies run on; dask: the tests that run
    # partitions on a local Dask cluster skip without distributed; inspect: tests/test_inspect.py
    # skips without inspect_ai.
    _sync(session, "test", extras=TEST_EXTRAS)
    # In CI the CAGE-2 tests, the inspect adapter's and the crate validator's must run, never
    # skip quietly for want of csle-cyborg, shared/, inspect_ai or roc-validator.
    env = {"REPRO_REQUIRE_CYBORG": "1", "REPRO_REQUIRE_EXTRAS": "1"} if os.environ.get("CI") else {}
    # The suite starts the command line, studies' workers and harnesses in fresh interpreters
    # again and again: each imports from the cache rather than compile all it imports.
    env.update(_bytecode_cached("tests"))
    upstream = _upstream_cyborg(session)
    if upstream is not None:  # tests/test_cyborg.py runs studies on upstream with it
        env["REPRO_UPSTREAM_PYTHON"] = upstream
    # The slowest tests named at the end of every run: the profile the suite's time is cut by.
    session.run("pytest", "--durations=40", *session.posargs, env=env)


@nox.session
def quick(session: nox.Session) -> None:
    """The quick tier, for the inner loop: every test not marked ``slow``, in random order as in
    ``tests``, spread over the machine's cores (pytest-xdist, ``-n auto``). ``slow`` marks the
    files and classes that run studies end to end, fresh interpreters, Chromium or CAGE-2, and
    each test measured at about a third of a second or more. Not a default session: ``uvx nox``
    runs the whole suite, slow tests included."""
    _sync(session, "test", extras=TEST_EXTRAS)
    session.run(
        "pytest", "-m", "not slow", "-n", "auto", *session.posargs, env=_bytecode_cached("tests")
    )


@nox.session
def lint(session: nox.Session) -> None:
    """ruff: lint and format check; lint-imports: the layers of pyproject.toml's
    [tool.importlinter] (no import cycle between subpackages, no upward import)."""
    _sync(session, "lint")
    session.run("ruff", "check", "src", "tests", "tools", "benchmarks", "noxfile.py")
    session.run("ruff", "format", "--check", "src", "tests", "tools", "benchmarks", "noxfile.py")
    session.run("lint-imports")


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
    on the shipped bundle, and the command template's steps (``protocol new --adapter
    command``, ``protocol check``, ``study``, ``verify``), from a directory outside the source
    tree. The wheel alone brings
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
    constraints = _locked_constraints(session, work / "constraints.txt")
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
    # The command template's next steps work with the wheel alone: it writes its harness
    # beside the protocol from the wheel's repro/templates, not from the source tree's tests.
    new = work / "new-command"
    new.mkdir()
    session.run(repro, "protocol", "new", "--adapter", "command", "--out", str(new / "p.json"))
    session.run(repro, "protocol", "check", str(new / "p.json"), env=env)
    session.run(repro, "study", str(new / "p.json"), "--out", str(new / "bundle"), env=env)
    session.run(repro, "verify", str(new / "bundle"), env=env)


def _locked_constraints(session: nox.Session, path: Path, extras: tuple[str, ...] = ()) -> Path:
    """Write to ``path`` uv.lock's versions of the project's dependencies and of the given
    extras', as pip constraints (``uv export``), and return it."""
    session.run(
        "uv",
        "export",
        "--quiet",
        "--locked",
        "--no-default-groups",
        "--no-emit-project",
        "--no-hashes",
        *(f"--extra={e}" for e in extras),
        "--output-file",
        str(path),
    )
    return path


#: The libraries whose versions decide the bytes of a derived figure: the numerics (NumPy,
#: SciPy) and the JSON that carries it (attrs and cattrs build it, orjson writes it).
DERIVATION_LIBRARIES = ("numpy", "scipy", "attrs", "cattrs", "orjson")
#: The library that decides the bytes of the HTML page (``repro show --html``), the markup it is
#: made of: held at its declared minimum beside those, each bundle's page must come out the same
#: under both environments.
PAGE_LIBRARIES = ("markupsafe",)
#: Every library the ``oldest`` environment holds at its declared minimum.
PINNED_LIBRARIES = (*DERIVATION_LIBRARIES, *PAGE_LIBRARIES)

#: The bundles the compat session makes: every shipped protocol that needs no simulator beyond
#: gymnasium (inspect-arithmetic needs inspect_ai; the recorded ones need none: they read
#: files), each made in seconds. By what it derives:
COMPAT_PROTOCOLS = (
    "protocols/gymnasium-classic-control.json",  # the quick start: normal intervals
    "protocols/gymnasium-paired-crn.json",  # t intervals; contrasts under common random numbers
    "protocols/gymnasium-paired-independent.json",  # the same contrasts, independent seeds
    "protocols/gymnasium-rl-aggregates.json",  # rliable's aggregates, bootstrap intervals
    "protocols/agent-gate-eval.json",  # scores and gates, on protocols/harness/fake_harness.py
    "tests/data/bootstrap-contrasts.json",  # contrasts with bootstrap intervals
    "protocols/recorded-rliable.json",  # runs read from a carried table: rliable's aggregates
    "protocols/recorded-inspect.json",  # runs read from two inspect logs: McNemar's exact test
)
#: CAGE-2 Scenario2 on csle-cyborg (cheap to install at any of these versions), as
#: protocols/cage2-ccs-sleeper-reduced.json at 5 episodes per condition; made when the scenario
#: is there (../shared/cage2, as for the tests session).
COMPAT_CAGE2 = "tests/data/compat/cage2-ccs-sleeper-compat.json"
CAGE2_SCENARIO = Path(__file__).parent.parent / "shared" / "cage2" / "scenario"
#: The bundle a forged copy is made of, its first condition's mean edited (tests/forge.py).
COMPAT_FORGED = "gymnasium-classic-control"


def _declared_minimum(name: str) -> str:
    """The lowest version of ``name`` that pyproject.toml's dependencies declare (its ``>=``)."""
    project = tomllib.loads((Path(__file__).parent / "pyproject.toml").read_text("utf-8"))
    for requirement in project["project"]["dependencies"]:
        found = re.fullmatch(rf"{name}\s*>=\s*([^,;\s]+)\s*", requirement)
        if found:
            return found.group(1)
    raise ValueError(f"pyproject.toml declares no minimum of {name}")


def _study(repro: Path, protocol: Path, out: Path, options: list[str]) -> str | None:
    """Run ``repro study`` of ``protocol`` into ``out``: None when it is done, else its exit
    code and the last line it wrote to stderr."""
    done = subprocess.run(
        [str(repro), "study", str(protocol), "--out", str(out), *options],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": ""},
    )
    return None if done.returncode == 0 else _ended(done)


def _ended(done: subprocess.CompletedProcess[str]) -> str:
    """How a command that failed ended: its exit code and the last line of its stderr."""
    last = [line for line in done.stderr.splitlines() if line.strip()][-1:]
    return f"exit {done.returncode}: {' '.join(last).strip()}"


def _verdict(repro: Path, bundle: Path) -> tuple[bool | None, str]:
    """What ``repro verify --json`` says of the bundle: True when it verifies, False when it
    names findings, None when verify itself failed; and a line saying so: the findings' codes
    with the files they name, counted, and the first three findings (or how verify ended)."""
    done = subprocess.run(
        [str(repro), "verify", "--json", str(bundle)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": ""},
    )
    try:
        result = json.loads(done.stdout)
    except ValueError:  # verify itself failed (a traceback): no JSON
        return None, f"verify itself failed, {_ended(done)}"
    findings = result["findings"]
    if result["ok"]:
        return True, "verifies"
    counts = collections.Counter((f["code"], f["file"]) for f in findings)
    said = ", ".join(f"{code} {file} x{n}" for (code, file), n in sorted(counts.items()))
    first = "; ".join(
        f"{f['code']} {f['file']} {f['what']}: expected {f['expected']}, found {f['found']}"
        for f in findings[:3]
    )
    return False, f"{len(findings)} findings: {said}; first: {first}"


@nox.session(venv_backend="none")
def compat(session: nox.Session) -> None:
    """Bundles made under the oldest versions pyproject.toml declares of the libraries that
    decide a derived figure's bytes (:data:`DERIVATION_LIBRARIES`) verify under uv.lock's, and
    the other way round; and the HTML page of each bundle comes out the same bytes under the
    oldest version declared of the library it is made with (:data:`PAGE_LIBRARIES`) as under
    uv.lock's.

    The wheel is built once and installed, with its gymnasium extra, into two fresh
    environments on Python 3.11: ``oldest``, with those libraries at their declared minimum and
    everything else at uv.lock's versions, and ``locked``, all at uv.lock's versions. Each makes
    a bundle of every protocol in :data:`COMPAT_PROTOCOLS` (and :data:`COMPAT_CAGE2` when the
    scenario is there); each verifies the other's bundles, and a copy of one with a figure
    edited and the manifests regenerated, which must be named under both. Prints, per bundle
    and direction, the verdict and the findings' codes, and whether the two bundles' runs are
    byte for byte the same; fails if any bundle does not verify across, or the forged one
    does."""
    here = Path(__file__).parent
    work = here / ".nox" / "compat"
    shutil.rmtree(work, ignore_errors=True)  # fresh every time: nothing left from a run before
    session.run("uv", "build", "--quiet", "--wheel", "--out-dir", str(work / "dist"), str(here))
    (built,) = (work / "dist").glob("*.whl")
    protocols = [here / p for p in COMPAT_PROTOCOLS]
    extras: tuple[str, ...] = ("gymnasium",)
    if CAGE2_SCENARIO.is_dir():
        protocols.append(here / COMPAT_CAGE2)
        extras += ("cyborg",)
    else:
        session.log(f"CAGE-2 left out: no scenario at {CAGE2_SCENARIO}")
    locked = _locked_constraints(session, work / "locked.txt", extras)
    pinned = [f"{name}=={_declared_minimum(name)}" for name in PINNED_LIBRARIES]
    kept = [
        line
        for line in locked.read_text("utf-8").splitlines()
        if not line.startswith(tuple(f"{name}==" for name in PINNED_LIBRARIES))
    ]
    oldest = work / "oldest.txt"
    oldest.write_text("\n".join([*kept, *pinned]) + "\n", "utf-8")
    env = {"PYTHONPATH": ""}  # the wheel's repro, never the source tree's
    versions, repros, failures = {}, {}, []
    made: set[tuple[str, str]] = set()  # (environment, protocol) of every bundle a study made
    for name, constraints in (("oldest", oldest), ("locked", locked)):
        venv = work / name
        python = venv / "bin" / "python"
        session.run("uv", "venv", "--quiet", "--python", "3.11", str(venv))
        requirement = f"repro-evidence[{','.join(extras)}] @ {built.as_uri()}"
        session.run(
            "uv",
            "pip",
            "install",
            "--quiet",
            "--python",
            str(python),
            "--constraint",
            str(constraints),
            requirement,
        )
        listed = session.run(
            str(python),
            "-c",
            "import importlib.metadata as m, sys; "
            "print(', '.join(f'{d} {m.version(d)}' for d in sys.argv[1:]))",
            *PINNED_LIBRARIES,
            env=env,
            silent=True,
        )
        versions[name] = str(listed).strip()
        repros[name] = venv / "bin" / "repro"
        session.log(f"{name}: {versions[name]}")
        (venv / "bundles").mkdir()
        for protocol in protocols:
            options = (
                ["--option", f"scenario_dir={CAGE2_SCENARIO}"] if "cage2" in protocol.stem else []
            )
            refused = _study(repros[name], protocol, venv / "bundles" / protocol.stem, options)
            if refused is None:
                made.add((name, protocol.stem))
            else:
                session.log(f"  {protocol.stem}: the study failed under {name}: {refused}")
                failures.append(f"the study of {protocol.stem} under {name}")
    forged = work / "forged"
    shutil.copytree(work / "locked" / "bundles" / COMPAT_FORGED, forged)
    session.run(
        str(work / "locked" / "bin" / "python"),
        str(here / "tests" / "forge.py"),
        str(forged),
        env=env,
    )
    for maker, checker in (("oldest", "locked"), ("locked", "oldest")):
        session.log(f"made under {maker} ({versions[maker]}), verified under {checker}:")
        for protocol in protocols:
            bundle = work / maker / "bundles" / protocol.stem
            if (maker, protocol.stem) not in made:
                session.log(f"  {protocol.stem}: not made under {maker}")
                continue
            verified, said = _verdict(repros[checker], bundle)
            if verified is False:
                said = f"FAILS, {said}"
            if (checker, protocol.stem) in made:
                same = _runs(bundle) == _runs(work / checker / "bundles" / protocol.stem)
                said += f" (runs {'the same' if same else 'differ'} under {checker})"
            session.log(f"  {protocol.stem}: {said}")
            if not verified:
                failures.append(f"{protocol.stem} made under {maker}, verified under {checker}")
    for protocol in protocols:
        if not {("oldest", protocol.stem), ("locked", protocol.stem)} <= made:
            continue
        bundle = work / "locked" / "bundles" / protocol.stem
        pages = [
            _page(repros[name], bundle, work / name / f"{protocol.stem}.html") for name in repros
        ]
        same = pages[0] is not None and pages[0] == pages[1]
        session.log(f"the page of {protocol.stem} under both: {'the same' if same else 'DIFFERS'}")
        if not same:
            failures.append(f"the page of {protocol.stem} differs between oldest and locked")
    for checker in ("oldest", "locked"):
        verified, said = _verdict(repros[checker], forged)
        named = "named" if verified is False else "NOT NAMED"
        session.log(f"forged {COMPAT_FORGED} (a mean moved) under {checker}: {named}, {said}")
        if verified is not False:
            failures.append(f"the forged {COMPAT_FORGED} is not named under {checker}")
    if failures:
        session.error("; ".join(failures))


def _page(repro: Path, bundle: Path, out: Path) -> bytes | None:
    """The HTML page ``repro show --html`` makes of ``bundle`` (written to ``out``), or None
    when it made none."""
    done = subprocess.run(
        [str(repro), "show", str(bundle), "--html", str(out)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": ""},
    )
    return out.read_bytes() if done.returncode == 0 and out.is_file() else None


def _runs(bundle: Path) -> dict[str, bytes]:
    """The recorded runs of a bundle, by file name."""
    return {p.name: p.read_bytes() for p in sorted((bundle / "data" / "runs").glob("*"))}


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
    compile every module it imports again: here ``import repro._cli.app, repro.verify`` took
    0.25 s against 0.12 s from the cache, and a commit's extracted tree has no cache at
    all). Nothing is written in the source tree nor in the session's environment."""
    cache = Path(__file__).resolve().parent / ".nox" / f"{name}-pycache"
    return {"PYTHONDONTWRITEBYTECODE": "", "PYTHONPYCACHEPREFIX": str(cache)}


#: Scripts in benchmarks/ that the benchmarks session does not run (see there).
_BY_HAND = ("busy_suite.py", "byte_identity.py", "commit_cost.py", "slowest_tests.py")


@nox.session
def benchmarks(session: nox.Session) -> None:
    """Every script in benchmarks/ with its default sizes, one after another, or those named
    (``uvx nox -s benchmarks -- large_bundles.py inspect_overhead.py``); each prints the ratios
    it measures (the CAGE-2 parts need ../shared/cage2). Minutes, on a quiet machine."""
    # The test group brings bagit.py; inspect_overhead.py needs inspect_ai.
    _sync(session, "test", extras=("gymnasium", "cyborg", "inspect"))
    # busy_suite.py and slowest_tests.py run nox themselves (by hand, not inside nox);
    # byte_identity.py and commit_cost.py compare two commits (by hand, with --baseline: by
    # default they would compare this tree with itself); _*.py are their modules.
    scripts = [
        script
        for script in sorted(Path("benchmarks").glob("*.py"))
        if script.name not in _BY_HAND and not script.name.startswith("_")
    ]
    unknown = sorted(set(session.posargs) - {script.name for script in scripts})
    if unknown:
        session.error(f"no such benchmark: {', '.join(unknown)} (benchmarks/*.py, by file name)")
    for script in scripts:
        if not session.posargs or script.name in session.posargs:
            session.run("python", str(script), env=_bytecode_cached("benchmarks"))
