"""Hypothesis fuzzing of the strict JSON reader and of verify on arbitrary small trees.

Example counts stay CI-friendly; ``REPRO_STRESS=1`` runs ten times as many.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from attrs import frozen
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from conftest import SMALL, run_study
from guarantees import record
from repro._bundle.writer import BAGIT_TXT, bag_info, manifest_text
from repro._json import canonical
from repro._layout import MANIFEST, PROTOCOL, TAG_FILES, TAGMANIFEST
from repro.errors import BadInput
from repro.verify import Finding, verify

pytestmark = [
    pytest.mark.stress,
    pytest.mark.skipif(sys.platform == "win32", reason="verify's no-follow reads need POSIX"),
]

SCALE = 10 if os.environ.get("REPRO_STRESS") == "1" else 1


def _settings(examples: int) -> settings:
    return settings(
        max_examples=examples * SCALE,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


# --------------------------------------------------------------------------- canonical JSON

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-canonical.MAX_INT, canonical.MAX_INT)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5)
    ),
    max_leaves=25,
)


@frozen
class Raw:
    """JSON text put verbatim where a value or key goes."""

    text: bytes


#: Values a lenient reader would accept and mangle, or that have no canonical form.
RAW_VALUES = [
    b"1e999",
    b"-1e400",
    b"1.5e308",
    b"4.9e-325",
    b'"\\ud800"',
    b'"a\\udfffb"',
    b'"\\ud83d\\ude00"',
    b'"\\u0000"',
    b"NaN",
    b"-Infinity",
    b"9" * 25,
    b"-9223372036854775809",
    b"1" * 5000,
    b"-0",
    b"1E+2",
    b"[" * 70 + b"]" * 70,
    b'{"a":1,"a":2}',
]
RAW_KEYS = [b'"\\ud800"', b'"\\udc00x"', b'"k"']
#: Fragments spliced anywhere into the text.
SPLICES = [b"\xff", b"\xed\xa0\x80", b"\xef\xbb\xbf", b",", b":", b"\\", b'"', b"[", b"}"]
TRICKY = st.recursive(
    SCALARS | st.sampled_from(RAW_VALUES).map(Raw),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.text(max_size=6) | st.sampled_from(RAW_KEYS).map(Raw), inner, max_size=4
        )
    ),
    max_leaves=12,
)


def _render(value: Any) -> bytes:
    if isinstance(value, Raw):
        return value.text
    if isinstance(value, dict):
        pairs = (_render(k) + b":" + _render(v) for k, v in value.items())
        return b"{" + b",".join(pairs) + b"}"
    if isinstance(value, list):
        return b"[" + b",".join(map(_render, value)) + b"]"
    return canonical.dumps(value, newline=False)


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    return 0


@st.composite
def json_like(draw: st.DrawFn) -> bytes:
    """JSON text with tricky values and keys in place, and sometimes a fragment spliced in or a
    byte deleted."""
    text = bytearray(_render(draw(TRICKY)))
    for _ in range(draw(st.integers(0, 2))):
        at = draw(st.integers(0, len(text)))
        if draw(st.booleans()):
            text[at:at] = draw(st.sampled_from(SPLICES))
        else:
            del text[at : at + 1]
    return bytes(text)


def _loads_or_refuses(data: bytes) -> None:
    """``loads`` raises BadInput or returns a value with a canonical form that reads back the
    same."""
    try:
        value = canonical.loads(data)
    except BadInput:
        record("fuzzed JSON inputs refused as bad input", 1)
        return
    written = canonical.dumps(value)
    assert canonical.dumps(canonical.loads(written)) == written
    record("fuzzed JSON inputs read and rewritten canonically", 1)


class TestCanonicalFuzz:
    """The strict reader raises BadInput and nothing else, and canonical bytes round-trip."""

    @_settings(100)
    @given(st.binary(max_size=200))
    def test_arbitrary_bytes(self, data: bytes) -> None:
        """Arbitrary bytes: BadInput or a value that has a canonical form."""
        _loads_or_refuses(data)

    @pytest.mark.slow
    @_settings(150)
    @given(json_like())
    def test_spliced_json(self, data: bytes) -> None:
        """JSON text holding overflowing numbers, lone surrogates, over-long integers, deep
        nesting, duplicate keys, or spliced with invalid UTF-8: BadInput or a value with a
        canonical form."""
        _loads_or_refuses(data)

    @pytest.mark.slow
    @_settings(100)
    @given(VALUES)
    def test_round_trip(self, value: Any) -> None:
        """Any JSON-able value's canonical bytes read back to the same value and the same
        bytes."""
        assume(_depth(value) <= canonical.MAX_DEPTH)
        data = canonical.dumps(value)
        back = canonical.loads(data, max_bytes=len(data))
        assert back == value
        assert canonical.dumps(back) == data


# --------------------------------------------------------------------------- verify on trees

TAG_NAMES = ["bagit.txt", "bag-info.txt", MANIFEST, TAGMANIFEST]
KNOWN_NAMES = [
    "data",
    "plans",
    "runs",
    "protocol.json",
    "seal.json",
    "c00.json",
    "c00.jsonl",
    "aggregates.json",
    ".c00.jsonl.partial",
    ".hidden",
    *TAG_NAMES,
]
NAMES = st.sampled_from(KNOWN_NAMES) | st.text(
    st.characters(blacklist_characters="/\x00", blacklist_categories=("Cs",)),
    min_size=1,
    max_size=8,
).filter(lambda name: name not in (".", ".."))
PATHS = st.lists(NAMES, min_size=1, max_size=3).map("/".join)


@pytest.fixture(scope="module")
def base_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """The files of a real bundle (one condition, two runs) by name."""
    tmp = tmp_path_factory.mktemp("fuzz-base")
    protocol = copy.deepcopy(SMALL) | {"runs_per_condition": 2}
    protocol["matrix"][0]["levels"] = ["CartPole-v1"]
    protocol["participants"] = protocol["participants"][:1]
    path = tmp / "protocol.json"
    path.write_text(json.dumps(protocol), "utf-8")
    root = run_study(path, tmp / "bundle")
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _mutated(draw: st.DrawFn, data: bytes) -> bytes:
    if not data:
        return data
    out = bytearray(data)
    edit = draw(st.sampled_from(["flip", "truncate", "append"]))
    if edit == "flip":
        out[draw(st.integers(0, len(out) - 1))] ^= draw(st.integers(1, 255))
    elif edit == "truncate":
        del out[draw(st.integers(0, len(out) - 1)) :]
    else:
        out += draw(st.binary(min_size=1, max_size=16))
    return bytes(out)


def _contents(draw: st.DrawFn, base: dict[str, bytes]) -> bytes:
    source = draw(st.sampled_from(["random", "bundle file", "mutated bundle file"]))
    if source == "random":
        return draw(st.binary(max_size=64))
    data = base[draw(st.sampled_from(sorted(base)))]
    return data if source == "bundle file" else _mutated(draw, data)


def _bag(files: dict[str, bytes], with_tags: bool) -> dict[str, bytes]:
    """``files`` with a payload manifest, and optionally bagit.txt, bag-info.txt and a tag
    manifest, all matching them: integrity holds, so verify goes on to parse."""
    payload = {n: d for n, d in files.items() if n.startswith("data/")}
    out = dict(files)
    out[MANIFEST] = manifest_text({n: canonical.sha256_hex(d) for n, d in payload.items()})
    if with_tags:
        out["bagit.txt"] = BAGIT_TXT
        out["bag-info.txt"] = bag_info(sum(map(len, payload.values())), len(payload), {})
        tags = ("bagit.txt", "bag-info.txt", MANIFEST)
        out[TAGMANIFEST] = manifest_text({n: canonical.sha256_hex(out[n]) for n in tags})
    return out


@st.composite
def trees(draw: st.DrawFn, base: dict[str, bytes]) -> dict[str, bytes]:
    """A small tree as name -> bytes: random paths and contents, a real bundle with a few files
    dropped, mutated, replaced or added, or random payload files with manifests built to match
    them."""
    kind = draw(st.sampled_from(["random", "mutated bundle", "random payload, matching bag"]))
    if kind == "random":
        return draw(st.dictionaries(PATHS, st.binary(max_size=64), max_size=8))
    if kind == "mutated bundle":
        files = dict(base)
        for _ in range(draw(st.integers(0, 3))):
            edit = draw(st.sampled_from(["drop", "mutate", "replace", "add"]))
            name = draw(st.sampled_from(sorted(files))) if files else "data/x"
            if edit == "drop":
                files.pop(name, None)
            elif edit == "mutate":
                files[name] = _mutated(draw, files.get(name, b""))
            elif edit == "replace":
                files[name] = _contents(draw, base)
            else:
                files[draw(PATHS)] = _contents(draw, base)
        return files
    payload = {
        f"data/{path}": _contents(draw, base)
        for path in draw(st.lists(PATHS, min_size=1, max_size=6, unique=True))
    }
    names = ["data/protocol.json", "data/plans/seal.json", "data/plans/c00.json"]
    payload.update({n: _contents(draw, base) for n in draw(st.lists(st.sampled_from(names)))})
    return _bag(payload, with_tags=draw(st.booleans()))


def _write(files: dict[str, bytes], root: Path) -> dict[str, bytes]:
    """Write the tree, skipping a path whose parent is a file or that is already a directory;
    return what was written."""
    written = {}
    for name, data in files.items():
        path = root / name
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        except (NotADirectoryError, IsADirectoryError, FileExistsError):
            continue
        written[name] = data
    return written


def _another_tools_bag(root: Path) -> bool:
    """Whether ``root`` holds no protocol, none of the files only a study writes, and more
    than a study that stopped at once holds: every entry's name, walked here apart from
    verify's walk."""
    names = set()
    for top, dirs, files in os.walk(root):
        for name in [*dirs, *files]:
            names.add((Path(top) / name).relative_to(root).as_posix())
    study_only = any(
        n in (PROTOCOL, "data/plans/seal.json", "data/source-ledger.json")
        or n.startswith(("data/plans/", "data/runs/"))
        for n in names
    )
    started = all(
        n in ("bagit.txt", "data")
        or (n.rsplit("/", 1)[-1].startswith(".") and n.endswith(".partial"))
        for n in names
    )
    return not study_only and not started


class TestVerifyFuzz:
    """verify never raises on a tree, and finds nothing only in a real bundle."""

    @pytest.mark.slow
    @_settings(150)
    @given(data=st.data())
    def test_arbitrary_tree(self, base_files: dict[str, bytes], data: st.DataObject) -> None:
        """Whatever the tree: no exception but "not a bundle" (BadInput), exactly when the root
        holds no BagIt tag file, or is another tool's bag, valid or not: no data/protocol.json,
        no file only a study writes (its plan, ledger, runs), and more than a study that
        stopped at once holds (bagit.txt, data/, files under a temporary name); otherwise no
        finding exactly when the tree is the real bundle byte for byte, and the first finding
        says incomplete exactly when there is no tag manifest."""
        files = data.draw(trees(base_files))
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp) / "root"
            root.mkdir()
            written = _write(files, root)
            marks = [*TAG_FILES, *(f".{name}.partial" for name in TAG_FILES)]
            marked = any(os.path.lexists(root / name) for name in marks)
            foreign = _another_tools_bag(root)
            try:
                findings: list[Finding] | None = verify(root)
            except BadInput:
                findings = None
            unfinished = not os.path.lexists(root / TAGMANIFEST)
            shutil.rmtree(root)
        record("fuzzed trees verified", 1)
        record("fuzzed trees that are the real bundle", int(written == base_files))
        record("fuzzed trees that are bags of another tool", int(marked and foreign))
        assert (findings is None) == (not marked or foreign), findings
        if findings is None:
            return
        assert (findings == []) == (written == base_files), findings
        if findings:
            assert findings[0].incomplete == unfinished, findings

    @pytest.mark.slow
    @_settings(100)
    @given(data=st.data())
    def test_arbitrary_bag_info(self, base_files: dict[str, bytes], data: st.DataObject) -> None:
        """bag-info.txt replaced by arbitrary bytes (its Payload-Oxum line kept, the tag
        manifest redone): verify raises nothing; it names the file as not UTF-8 exactly when it
        does not decode, and as holding NUL exactly when it holds one."""
        oxum = next(
            line for line in base_files["bag-info.txt"].splitlines(keepends=True) if b"Oxum" in line
        )
        info = data.draw(st.binary(max_size=200)) + b"\n" + oxum
        files = dict(base_files)
        files["bag-info.txt"] = info
        tags = ("bagit.txt", "bag-info.txt", MANIFEST)
        files[TAGMANIFEST] = manifest_text({n: canonical.sha256_hex(files[n]) for n in tags})
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp) / "root"
            root.mkdir()
            _write(files, root)
            codes = {f.code for f in verify(root)}
        record("fuzzed bag-info.txt files verified", 1)
        try:
            info.decode("utf-8")
            decodes = True
        except UnicodeDecodeError:
            decodes = False
        assert ("tag-file-not-utf8" in codes) == (not decodes), codes
        assert ("tag-file-nul" in codes) == (b"\x00" in info), codes
