"""docs/cli.md, generated from the command line's typer app.

Every command and subcommand of ``repro`` (``repro._cli.app.app``, as click builds it) gets a
section: its usage, its help (the command's docstring and its exit codes, as ``--help`` says
them), each argument and each option with its metavar, whether it is required or repeatable,
its default where ``--help`` shows one, and its help. It is written from the click parameters,
never from a formatted ``--help``, so it depends on no terminal: not its width, not its colours.
The click objects are read by what they are (``param_type_name``, ``list_commands``), not by
their classes: typer ships its own copy of click, whose classes are not the ``click`` package's.
``python tools/clidoc.py`` rewrites the file; ``tests/test_docs.py`` fails when the committed file
differs from what this module generates.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer.main

from repro._cli.app import app
from repro._escape import markdown_code, markdown_text

__all__ = ["reference", "write"]

#: Where the generated file goes in a checkout.
TARGET = Path("docs") / "cli.md"

#: The regenerating command, which the file's first line names.
COMMAND = "uv run python tools/clidoc.py"


def _paragraphs(text: str) -> list[str]:
    """``text`` (a docstring or a help) as Markdown paragraphs: its blank lines part them, and
    each paragraph's lines are joined as a terminal's help joins them."""
    blocks = inspect.cleandoc(text).split("\n\n")
    return [markdown_text(" ".join(block.split())) for block in blocks if block.strip()]


def _is_group(command: Any) -> bool:
    return hasattr(command, "list_commands")


def _is_argument(param: Any) -> bool:
    return bool(param.param_type_name == "argument")


def _commands(group: Any, ctx: Any) -> Iterator[Any]:
    """The context of ``group`` and of every command under it, depth first, in the order
    ``--help`` lists them; hidden commands are left out, as ``--help`` leaves them."""
    yield ctx
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if command is None or command.hidden:
            continue
        sub = command.context_class(command, info_name=name, parent=ctx, **command.context_settings)
        if _is_group(command):
            yield from _commands(command, sub)
        else:
            yield sub


def _metavar(param: Any, ctx: Any) -> str:
    """What ``--help`` shows after an option's name (``<path>``, ``NAME=N``; nothing for a
    flag); an argument's name in capitals, as the commands' help texts name it."""
    if _is_argument(param):
        return str(param.metavar or (param.name or "").upper())
    if param.is_flag:
        return ""
    return str(param.make_metavar(ctx))


def _usage(ctx: Any) -> str:
    """The command's usage line: its path, ``[OPTIONS]``, then a group's ``COMMAND [ARGS]...``
    or the command's arguments (an optional one in brackets, a variadic one with ``...``)."""
    command = ctx.command
    if _is_group(command):
        pieces = list(command.collect_usage_pieces(ctx))
    else:
        pieces = ["[OPTIONS]"]
        for param in command.get_params(ctx):
            if _is_argument(param):
                name = _metavar(param, ctx) + ("..." if param.nargs == -1 else "")
                pieces.append(name if param.required else f"[{name}]")
    return " ".join([ctx.command_path, *pieces])


def _bounds(param: Any) -> list[str]:
    """A range type's bounds, in words (``--help`` shows ``[x>=1]``)."""
    low, high = getattr(param.type, "min", None), getattr(param.type, "max", None)
    return [
        *([f"at least {low}"] if low is not None else []),
        *([f"at most {high}"] if high is not None else []),
    ]


def _default(param: Any, ctx: Any) -> str | None:
    """The default ``--help`` shows for an option, as text; None where it shows none."""
    if not param.show_default or (param.is_flag and not param.default):
        return None
    if isinstance(param.show_default, str):
        return param.show_default
    default = param.get_default(ctx, call=False)
    if default is None or default == [] or callable(default):
        return None
    if isinstance(default, list | tuple):
        return ", ".join(str(d) for d in default)
    return str(default)


def _spellings(names: list[str]) -> list[str]:
    return sorted(names, key=lambda name: (name.startswith("--"), name))


def _item(param: Any, ctx: Any) -> str:
    """One argument or option, as a list item: its names and metavar as code, what it is
    (required, repeatable, its default) and its help."""
    metavar = _metavar(param, ctx)
    if _is_argument(param):
        names = markdown_code(metavar)
    else:
        # Sorted, short spellings first: click keeps the help option's names in a set, whose
        # order changes from one interpreter to the next.
        spelled = [*_spellings(param.opts), *_spellings(param.secondary_opts)]
        names = ", ".join(
            markdown_code(f"{name} {metavar}" if metavar and i == len(spelled) - 1 else name)
            for i, name in enumerate(spelled)
        )
    facts = []
    if param.required:
        facts.append("required")
    if getattr(param, "multiple", False):
        facts.append("repeatable")
    facts += _bounds(param)
    if not _is_argument(param):
        default = _default(param, ctx)
        if default is not None:
            facts.append(f"default {markdown_code(default)}")
    said = f" ({', '.join(facts)})" if facts else ""
    help_text = getattr(param, "help", None) or ""
    text = " ".join(_paragraphs(help_text)) if help_text.strip() else ""
    return f"- {names}{said}{': ' + text if text else ''}"


def _section(ctx: Any) -> list[str]:
    command = ctx.command
    usage = _usage(ctx)
    lines = [f"## {markdown_code(ctx.command_path)}", "", f"Usage: {markdown_code(usage)}", ""]
    for paragraph in _paragraphs(command.help or ""):
        lines += [paragraph, ""]
    params = [p for p in command.get_params(ctx) if not getattr(p, "hidden", False)]
    arguments = [p for p in params if _is_argument(p)]
    options = [p for p in params if not _is_argument(p)]
    if _is_group(command):
        names = [
            markdown_code(f"{ctx.command_path} {name}")
            for name in command.list_commands(ctx)
            if not getattr(command.get_command(ctx, name), "hidden", False)
        ]
        lines += ["Commands: " + ", ".join(names) + ".", ""]
    for title, group in (("Arguments", arguments), ("Options", options)):
        if group:
            lines += [f"{title}:", "", *(_item(p, ctx) for p in group), ""]
    return lines


def reference() -> str:
    """docs/cli.md as this checkout's command line makes it."""
    root = typer.main.get_command(app)
    ctx = root.context_class(root, info_name="repro", **root.context_settings)
    lines = [
        f"> Generated from the command line (`repro._cli.app`) by `python tools/clidoc.py`: do "
        f"not edit it by hand; regenerate it with `{COMMAND}`.",
        "",
        "# Command-line reference",
        "",
        "Every command and subcommand of `repro`, with its usage, arguments, options and help, "
        "as `repro COMMAND --help` says them. What each command does in depth (parallel "
        "execution, signing, auditing): [commands.md](commands.md); from Python: "
        "[python-api.md](python-api.md).",
        "",
    ]
    for sub in _commands(root, ctx):
        lines += _section(sub)
    return "\n".join(lines).rstrip("\n") + "\n"


def write(root: Path) -> Path:
    """Write the reference under the checkout at ``root``; returns its path."""
    path = root / TARGET
    path.parent.mkdir(exist_ok=True)
    path.write_text(reference(), "utf-8")
    return path


if __name__ == "__main__":
    print(f"wrote {write(Path(__file__).resolve().parents[1])}")
