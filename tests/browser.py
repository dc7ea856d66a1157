"""Headless Chromium for the tests that render the HTML report: where it is, the fixture that
skips without it (and fails without it when CI is set, since ``.ci/run`` installs it), and one
way to run it off the network."""

from __future__ import annotations

import os
import shutil
import subprocess
from itertools import count
from pathlib import Path

import pytest

__all__ = ["CHROMIUM", "chromium_or_skip", "run_chromium"]

CHROMIUM = Path("/usr/bin/chromium")
_runs = count()


def chromium_or_skip() -> Path:
    """The Chromium binary; the test is skipped without it, and failed without it when CI is
    set."""
    if CHROMIUM.is_file() and os.access(CHROMIUM, os.X_OK):
        return CHROMIUM
    if os.environ.get("CI"):
        pytest.fail(f"CI is set but {CHROMIUM} is missing (.ci/run installs it with apt-get)")
    pytest.skip(f"{CHROMIUM} not installed (apt-get install chromium); CI never skips this")


def run_chromium(chromium: Path, tmp_path: Path, *args: str, timeout: float) -> str:
    """Run headless Chromium with ``args`` and return its stdout. The flags keep it off the
    network (without them it hangs on a closed one) and let it run as root; its profile is a
    fresh directory under ``tmp_path``, removed after."""
    profile = tmp_path / f"chromium-profile-{next(_runs)}"
    done = subprocess.run(
        [
            str(chromium),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "HOME": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    shutil.rmtree(profile, ignore_errors=True)
    return done.stdout
