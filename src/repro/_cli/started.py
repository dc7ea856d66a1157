"""How this repro was started, and so how to word a repro command that works as printed.

A study ends by printing the command that verifies its bundle. ``repro verify DIR`` works only
where ``repro`` on PATH is the repro that ran: under ``uv run`` the environment's ``bin`` is on
PATH for the study alone, not in the shell it returns to, and ``python -m repro`` or a script
run by its path may have no ``repro`` on PATH at all. :func:`command` words it from the facts
:func:`started` gathers; it is pure, so that each way of starting repro can be tested.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from attrs import frozen

__all__ = ["Started", "command", "started"]

#: The names of the console script a repro installation puts on PATH.
_SCRIPTS = ("repro", "repro.exe")
#: What ``__main__``'s spec is named when repro runs as ``python -m repro`` (or its app module).
_MODULES = ("repro", "repro.__main__", "repro._cli", "repro._cli.app")


@frozen
class Started:
    """The facts of how this process was started that decide how to word a repro command."""

    #: ``sys.argv[0]``: the console script's path, or ``__main__.py``'s under ``-m``.
    argv0: str
    #: ``sys.executable``: the interpreter running repro.
    executable: str
    #: The name of ``__main__``'s module spec (``repro.__main__`` under ``python -m repro``),
    #: or None when ``__main__`` has none (a script run by its path).
    main_module: str | None
    #: The working directory, against which relative paths are read.
    cwd: str
    #: ``shutil.which("repro")``: the ``repro`` a shell here would run.
    which_repro: str | None
    #: ``shutil.which`` of the interpreter's own name (``python3.11``, say).
    which_python: str | None
    #: Whether uv started this process (``uv run`` or ``uvx``: ``UV_RUN_RECURSION_DEPTH`` is
    #: set), whose PATH holds an environment that the shell uv returns to does not.
    under_uv: bool
    #: The uv project whose environment runs repro (the directory holding its pyproject.toml
    #: beside that environment), or None.
    uv_project: str | None


def started(environ: Mapping[str, str] | None = None) -> Started:
    """The facts of this process (:class:`Started`)."""
    env = os.environ if environ is None else environ
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    prefix = Path(sys.prefix)
    project = prefix.parent if (prefix.parent / "pyproject.toml").is_file() else None
    return Started(
        argv0=sys.argv[0] if sys.argv else "",
        executable=sys.executable,
        main_module=getattr(spec, "name", None),
        cwd=os.getcwd(),
        which_repro=shutil.which("repro"),
        which_python=shutil.which(os.path.basename(sys.executable)),
        under_uv="UV_RUN_RECURSION_DEPTH" in env,
        uv_project=None if project is None or sys.prefix == sys.base_prefix else str(project),
    )


def _absolute(path: str, cwd: str) -> str:
    return os.path.normpath(os.path.join(cwd, path))


def _inside(path: str, directory: str) -> bool:
    return os.path.commonpath([path, directory]) == directory


def command(args: Sequence[str], how: Started) -> str:
    """The shell command that runs ``repro ARGS`` as repro was started, quoted for a POSIX
    shell: ``repro verify DIR`` when the ``repro`` on PATH is the one running; ``uv run repro
    verify DIR`` under ``uv run`` in a project (with ``--project`` when the working directory
    is outside it); ``python3 -m repro verify DIR`` under ``python -m repro``; otherwise the
    absolute path of the running script, or of the interpreter with ``-m repro``, which work
    while this environment exists."""
    script = os.path.basename(how.argv0) in _SCRIPTS and how.main_module not in _MODULES
    python = [how.executable, "-m", "repro"]
    running = [_absolute(how.argv0, how.cwd)] if script else python
    if how.under_uv:
        if how.uv_project is None:  # uvx, uv run --with, a script's environment
            return shlex.join([*running, *args])
        project = [] if _inside(how.cwd, how.uv_project) else ["--project", how.uv_project]
        return shlex.join(["uv", "run", *project, "repro", *args])
    if script:
        on_path = how.which_repro is not None and _absolute(how.which_repro, how.cwd) == _absolute(
            how.argv0, how.cwd
        )
        return shlex.join(["repro" if on_path else running[0], *args])
    if how.which_python is not None and _absolute(how.which_python, how.cwd) == how.executable:
        python[0] = os.path.basename(how.executable)
    return shlex.join([*python, *args])
