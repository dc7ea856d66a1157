"""Check the built sdist and wheel, and the wheel once installed: the nox session ``wheel``
runs ``python tools/check_dist.py DIST_DIR`` on what ``uv build`` wrote, then
``python tools/check_dist.py --installed`` with the Python of a fresh environment that holds the
wheel alone. Each prints the problems it finds and exits 1 when there are any.

The sdist must hold what builds the wheel and what its reader needs (pyproject.toml,
README.md, LICENSE, src/, schemas/, docs/ with the shipped bundle, protocols/) and nothing else:
no tests (their data), tools, benchmarks, CI, lock file or byte code. The wheel must hold the
``repro`` package only (with its schemas, templates and BagIt profile), under the distribution name
``repro-evidence``, with the ``repro`` command and the built-in adapters' entry points, and
require what only an extra brings (a simulator) only under that extra. Installed, the
``repro`` import package must come from that distribution, from the environment's own
site-packages, with no distribution named ``repro`` (another project's, which installs files of
the same names) beside it, nor any that only an extra brings: the session then verifies the
shipped bundle there without the simulator.

Standard library only: the installed check runs in an environment that has nothing but the
wheel and its dependencies. A developer's tool: nothing in a study or a verification runs it."""

from __future__ import annotations

import configparser
import re
import sys
import tarfile
import tomllib
import zipfile
from email.parser import HeaderParser
from pathlib import Path, PurePosixPath

DISTRIBUTION = "repro-evidence"
#: The archives' file-name stem: the distribution name normalised as wheels and sdists spell it.
STEM = DISTRIBUTION.replace("-", "_")
_PROJECT = tomllib.loads(
    (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text("utf-8")
)["project"]
#: The built-in adapters, as pyproject.toml declares them in the ``repro.adapters`` group.
BUILT_IN_ADAPTERS = tuple(sorted(_PROJECT["entry-points"]["repro.adapters"]))


def _name(requirement: str) -> str:
    """A requirement's distribution name, normalised as PEP 503 does."""
    name = re.match(r"[A-Za-z0-9._-]+", requirement.strip())
    return re.sub(r"[-_.]+", "-", name.group(0) if name else "").lower()


#: What only one of repro's extras brings (the simulators among it: gymnasium, csle-cyborg,
#: inspect-ai): never required by the wheel alone, which verifies with none of it.
EXTRAS_ONLY = frozenset(
    _name(r) for rs in _PROJECT["optional-dependencies"].values() for r in rs
) - {_name(r) for r in _PROJECT["dependencies"]}

SDIST_TOP = {
    "src",
    "schemas",
    "docs",
    "protocols",
    "README.md",
    "LICENSE",
    "pyproject.toml",
    "PKG-INFO",
    ".gitignore",  # hatchling adds the project's own, which it reads to leave files out
}
SDIST_REQUIRED = (
    "PKG-INFO",
    "pyproject.toml",
    "README.md",
    "LICENSE",
    "src/repro/__init__.py",
    "src/repro/_cli/__init__.py",
)
#: Generous: the sdist is about 0.4 MB compressed; tests' data would take it past this.
SDIST_MAX_BYTES = 2_000_000


def _byte_code(name: str) -> bool:
    parts = PurePosixPath(name).parts
    return "__pycache__" in parts or name.endswith((".pyc", ".pyo"))


def sdist_problems(path: Path) -> list[str]:
    """What is wrong with the sdist at ``path``: each a line starting ``sdist``."""
    problems = []
    with tarfile.open(path) as archive:
        members = [m for m in archive.getmembers() if m.isfile()]
    names = []
    for member in members:
        parts = PurePosixPath(member.name).parts
        if len(parts) < 2 or not parts[0].startswith(f"{STEM}-"):
            problems.append(f"sdist unexpected: {member.name} (outside its top directory)")
            continue
        names.append(PurePosixPath(*parts[1:]).as_posix())
    for name in names:
        if PurePosixPath(name).parts[0] not in SDIST_TOP or _byte_code(name):
            problems.append(f"sdist unexpected: {name}")
    problems += [f"sdist missing: {name}" for name in SDIST_REQUIRED if name not in names]
    if not any(n.startswith("schemas/") and n.endswith(".json") for n in names):
        problems.append("sdist missing: schemas/*.json")
    if path.stat().st_size > SDIST_MAX_BYTES:
        problems.append(f"sdist is {path.stat().st_size} bytes, over {SDIST_MAX_BYTES}")
    return problems


def wheel_problems(path: Path) -> list[str]:
    """What is wrong with the wheel at ``path``: each a line starting ``wheel``."""
    problems = []
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
        infos = {n.split("/", 1)[0] for n in names if n.split("/", 1)[0].endswith(".dist-info")}
        if len(infos) != 1:
            return [f"wheel has {len(infos)} .dist-info directories, not 1"]
        (info,) = infos
        metadata = HeaderParser().parsestr(archive.read(f"{info}/METADATA").decode("utf-8"))
        entry_points = configparser.ConfigParser(delimiters=("=",))
        entry_points.optionxform = str  # type: ignore[assignment,method-assign]
        if f"{info}/entry_points.txt" in names:
            entry_points.read_string(archive.read(f"{info}/entry_points.txt").decode("utf-8"))
    for name in names:
        if name.split("/", 1)[0] not in {"repro", info} or _byte_code(name):
            problems.append(f"wheel unexpected: {name}")
    required = ("repro/__init__.py", "repro/_cli/__init__.py", f"{info}/licenses/LICENSE")
    # The HTML page's style sheet, package data beside the module that reads it; the BagIt
    # profile bundles name, which verify reads (its identifier does not resolve).
    for name in (*required, "repro/_present/page.css", "repro/data/bagit-profile.json"):
        if name not in names:
            problems.append(f"wheel missing: {name}")
    for folder in ("repro/json_schemas/", "repro/templates/"):
        if not any(n.startswith(folder) and n.endswith(".json") for n in names):
            problems.append(f"wheel missing: {folder}*.json")
    if metadata["Name"] != DISTRIBUTION:
        problems.append(f"wheel metadata Name is {metadata['Name']!r}, not {DISTRIBUTION!r}")
    for requirement in metadata.get_all("Requires-Dist") or []:
        if _name(requirement) in EXTRAS_ONLY and "extra ==" not in requirement.partition(";")[2]:
            problems.append(f"wheel requires {requirement.strip()} without an extra")
    scripts = dict(entry_points["console_scripts"]) if "console_scripts" in entry_points else {}
    if scripts.get("repro") != "repro._cli:main":
        problems.append("wheel entry points: console script repro missing")
    adapters = dict(entry_points["repro.adapters"]) if "repro.adapters" in entry_points else {}
    if tuple(sorted(adapters)) != BUILT_IN_ADAPTERS:
        problems.append(f"wheel entry points: repro.adapters are {sorted(adapters)}")
    return problems


def problems(dist: Path) -> list[str]:
    """What is wrong with the one sdist and the one wheel ``uv build`` wrote into ``dist``."""
    sdists, wheels = sorted(dist.glob("*.tar.gz")), sorted(dist.glob("*.whl"))
    if len(sdists) != 1 or len(wheels) != 1:
        return [f"{dist}: {len(sdists)} sdists and {len(wheels)} wheels, not one of each"]
    out = [
        f"{p.name} is not named for {DISTRIBUTION}"
        for p in (*sdists, *wheels)
        if not p.name.startswith(f"{STEM}-")
    ]
    return out + sdist_problems(sdists[0]) + wheel_problems(wheels[0])


def installed_problems() -> list[str]:
    """What is wrong with ``repro`` as this interpreter imports it: run with the Python of the
    environment the wheel was installed into."""
    import importlib.metadata
    import sysconfig

    out = []
    providers = importlib.metadata.packages_distributions().get("repro", [])
    if providers != [DISTRIBUTION]:
        out.append(f"the repro import package comes from {providers}, not [{DISTRIBUTION!r}]")
    try:
        importlib.metadata.distribution("repro")
    except importlib.metadata.PackageNotFoundError:
        pass
    else:
        out.append("a distribution named repro (another project's) is installed here")
    import repro

    site = Path(sysconfig.get_paths()["purelib"]).resolve()
    where = Path(repro.__file__ or "").resolve()
    if site not in where.parents:
        out.append(f"repro is imported from {where}, outside this environment's {site}")
    if repro.version() != importlib.metadata.version(DISTRIBUTION):
        out.append(f"repro.version() is {repro.version()}, not the distribution's")
    for name in sorted(EXTRAS_ONLY):
        try:
            importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        out.append(f"{name} is installed beside the wheel alone, though only an extra brings it")
    return out


def main(argv: list[str]) -> int:
    """``check_dist.py DIST_DIR`` or ``check_dist.py --installed``."""
    if argv == ["--installed"]:
        found, what = installed_problems(), "the installed wheel"
    elif len(argv) == 1:
        found, what = problems(Path(argv[0])), f"the archives in {argv[0]}"
    else:
        print("usage: check_dist.py DIST_DIR | --installed", file=sys.stderr)
        return 2
    for problem in found:
        print(problem, file=sys.stderr)
    print(f"check_dist: {what}: {len(found)} problems")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
