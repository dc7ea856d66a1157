"""Byte identity across a refactor: each shipped protocol's study made by two versions of repro.

For each protocol in the baseline's ``protocols/``, as the baseline has it (the full 9,000-episode
CAGE-2 row only with ``--full``; a protocol the candidate added is a new study, not compared), the
script runs ``repro study`` once with the baseline's source tree (``git archive`` of ``--baseline``,
a commit) and once with the candidate's (``--candidate``, a commit; the working tree by default),
both in this interpreter's environment with ``PYTHONPATH`` set to the tree's ``src``, alternating
which goes first. With no arguments it compares HEAD with the working tree. It then compares, byte
for byte, every file a study's outcome consists of: ``protocol.json``, ``plans/``, ``runs/``,
``aggregates.json``, ``tiers.json``, ``source-ledger.json``, ``scores.json`` (where the protocol
scores), ``contrasts.json`` (where it declares contrasts) and ``validation-report.md``. Left
out: ``times/`` (wall-clock times), ``environment.json`` and the RO-Crate (host, dates,
versions) and the BagIt tag files (dates, digests of those).

It prints one line per protocol: the files compared, the files that differ (named), and both
wall times. It exits 1 if any file differs, or if a side's study fails.

    uv run --extra cyborg python benchmarks/byte_identity.py --baseline ebae8d8
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _trees import commit_tree

ROOT = Path(__file__).resolve().parents[1]
SCENARIO_DIR = ROOT.parent / "shared" / "cage2" / "scenario"
#: The files of a bundle's payload that a study's outcome consists of (directories end in /).
COMPARED = (
    "protocol.json",
    "plans/",
    "runs/",
    "aggregates.json",
    "tiers.json",
    "source-ledger.json",
    "scores.json",
    "contrasts.json",
    "validation-report.md",
)
#: The full-size studies (thousands of CAGE-2 episodes, minutes to an hour each): only with --full.
FULL = ("cage2-ccs-sleeper.json", "cage2-ccs-heuristic.json", "cage2-sleeper-vs-react.json")


def _runnable(protocol: Path) -> str | None:
    """Why this environment cannot run ``protocol`` (None when it can): a CAGE-2 protocol that
    requires upstream CybORG (``backend: cyborg``) where only the fork is installed."""
    options = json.loads(protocol.read_text("utf-8"))["adapter"].get("options", {})
    if options.get("backend") == "cyborg" and importlib.util.find_spec("CybORG") is None:
        return "requires upstream CybORG, which this environment does not have"
    return None


def tree(ref: str | None, into: Path) -> Path:
    """The ``src`` directory of repro at commit ``ref`` (the working tree for None), extracted
    with the ``schemas`` beside it and the ``protocols`` of that commit."""
    return ROOT / "src" if ref is None else commit_tree(ref, into, "protocols")


def repro(src: Path, *args: str) -> float:
    """Run ``repro ARGS`` with the repro found in ``src``, in a fresh process of this
    interpreter; its wall time in seconds. Exits when it fails."""
    command = [sys.executable, "-m", "repro", *args]
    env = {**os.environ, "PYTHONPATH": str(src)}
    start = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"{' '.join(args)} with {src}: exit {done.returncode}\n{done.stderr[-2000:]}")
    return time.perf_counter() - start


def study(src: Path, protocol: Path, out: Path) -> float:
    """Run one study with the repro found in ``src``; its wall time in seconds."""
    args = ["study", str(protocol), "--out", str(out)]
    if protocol.name.startswith("cage2"):
        args += ["--option", f"scenario_dir={SCENARIO_DIR}"]
    return repro(src, *args)


def outcome_files(bundle: Path) -> dict[str, bytes]:
    """The compared files of a bundle's payload, by their name below ``data/``."""
    data = bundle / "data"
    found = {}
    for name in COMPARED:
        if name.endswith("/"):
            for path in sorted((data / name).glob("*")):
                found[f"{name}{path.name}"] = path.read_bytes()
        elif (data / name).is_file():
            found[name] = (data / name).read_bytes()
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", default="HEAD", help="the commit before (default: HEAD)")
    parser.add_argument("--candidate", default=None, help="a commit (default: the working tree)")
    parser.add_argument(
        "--full", action="store_true", help=f"also run {', '.join(FULL)} (minutes each)"
    )
    parser.add_argument(
        "--only",
        action="append",
        metavar="NAME",
        help="compare only these protocols (file names, repeatable), e.g. those whose adapter "
        "this environment runs: the CAGE-2 protocols that require upstream CybORG run only where "
        "it is installed",
    )
    args = parser.parse_args()
    differing = 0
    with tempfile.TemporaryDirectory() as scratch:
        base = Path(scratch)
        sides = {
            "baseline": tree(args.baseline, base / "baseline"),
            "candidate": tree(args.candidate, base / "candidate"),
        }
        # The baseline's protocols, as that commit had them: a protocol the candidate changed
        # or added is a new study, not one whose bundle must stay the same.
        protocols = sorted(
            p
            for p in (sides["baseline"].parent / "protocols").glob("*.json")
            if (args.full or p.name not in FULL) and (args.only is None or p.name in args.only)
        )
        for index, protocol in enumerate(protocols):
            why = _runnable(protocol)
            if why is not None:
                print(f"{protocol.name}: not compared: {why}", flush=True)
                continue
            order = list(sides) if index % 2 == 0 else list(reversed(sides))
            walls, files = {}, {}
            for side in order:
                out = base / f"{side}-{protocol.stem}"
                walls[side] = study(sides[side], protocol, out)
                files[side] = outcome_files(out)
            names = sorted(set(files["baseline"]) | set(files["candidate"]))
            differ = [n for n in names if files["baseline"].get(n) != files["candidate"].get(n)]
            differing += len(differ)
            print(
                f"{protocol.name}: {len(names)} files compared, {len(differ)} differ"
                + (f" ({', '.join(differ)})" if differ else "")
                + f"; baseline {walls['baseline']:.1f} s, candidate {walls['candidate']:.1f} s",
                flush=True,
            )
    print("byte-identical" if differing == 0 else f"{differing} file(s) differ")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
