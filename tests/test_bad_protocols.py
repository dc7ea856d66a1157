"""Bad protocols: ``repro study`` exits 2, names the JSON path, and writes nothing."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from repro import canonical
from repro.cli import app
from repro.errors import BadInput
from repro.protocol import MAX_PROTOCOL_BYTES

runner = CliRunner()

WriteProtocol = Callable[..., Path]


def _flat(text: str) -> str:
    """Output with runs of white space collapsed: Rich may wrap long lines."""
    return " ".join(text.split())


def _study(protocol: Path, out: Path) -> Result:
    return runner.invoke(app, ["study", str(protocol), "--out", str(out)])


def _refused(protocol: Path, tmp_path: Path, *phrases: str) -> str:
    """Run ``study`` into a fresh nested --out: exit 2, every phrase in the message, and neither
    the output root nor its parent created. Returns the flattened message."""
    out = tmp_path / "results" / "bundle"
    result = _study(protocol, out)
    assert result.exit_code == 2, result.output
    message = _flat(result.stderr)
    assert message.startswith("error:"), result.output
    for phrase in phrases:
        assert phrase in message, f"{phrase!r} not in {message!r}"
    assert "Traceback" not in result.output
    assert not out.exists()
    assert not out.parent.exists()
    return message


def _raw(tmp_path: Path, text: str | bytes) -> Path:
    """Write raw protocol bytes (for what json.dumps would never produce)."""
    path = tmp_path / "raw-protocol.json"
    path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    return path


def _text_of(protocol: dict[str, Any]) -> str:
    return json.dumps(protocol, indent=1)


#: Right type, out of range: (edit, field name, JSON path of the object holding the field).
OUT_OF_RANGE: list[tuple[Callable[[dict[str, Any]], None], str, str]] = [
    (lambda p: p.update(runs_per_condition=0), "runs_per_condition", "$"),
    (lambda p: p["seeding"].update(seed=-1), "seed", "$.seeding"),
    (lambda p: p["interval"].update(level=1.5), "level", "$.interval"),
    (lambda p: p["retry"].update(max_attempts=0), "max_attempts", "$.retry"),
    (lambda p: p.update(id="has space"), "id", "$"),
    (lambda p: p.update(matrix=[]), "matrix", "$"),
]
OUT_OF_RANGE_IDS = [
    "zero-runs",
    "negative-seed",
    "level-above-one",
    "zero-attempts",
    "bad-id",
    "empty",
]


class TestUnknownKeys:
    """Keys the protocol model does not declare are refused, with their path."""

    def test_unknown_top_level_key(
        self, small_protocol: dict[str, Any], write_protocol: WriteProtocol, tmp_path: Path
    ) -> None:
        """An unknown top-level key is named at $."""
        small_protocol["runs_per_condtion"] = 3
        _refused(write_protocol(small_protocol), tmp_path, "runs_per_condtion", "@ $")

    def test_unknown_nested_key(
        self, small_protocol: dict[str, Any], write_protocol: WriteProtocol, tmp_path: Path
    ) -> None:
        """An unknown key inside seeding is named at $.seeding."""
        small_protocol["seeding"]["salt"] = 1
        _refused(write_protocol(small_protocol), tmp_path, "salt", "@ $.seeding")

    def test_unknown_key_in_array_item(
        self, small_protocol: dict[str, Any], write_protocol: WriteProtocol, tmp_path: Path
    ) -> None:
        """An unknown key in the second participant is named at $.participants[1]."""
        small_protocol["participants"][1]["weight"] = 2
        _refused(write_protocol(small_protocol), tmp_path, "weight", "@ $.participants[1]")

    def test_unknown_participant_param(
        self, small_protocol: dict[str, Any], write_protocol: WriteProtocol, tmp_path: Path
    ) -> None:
        """A parameter the adapter does not take is named at the participant's params."""
        small_protocol["participants"][0]["params"] = {"temperature": 1}
        _refused(
            write_protocol(small_protocol), tmp_path, "temperature", "@ $.participants[0].params"
        )


class TestStrictJson:
    """What a lenient JSON parser would accept is refused, naming where."""

    def test_duplicate_key(self, small_protocol: dict[str, Any], tmp_path: Path) -> None:
        """A key repeated inside seeding is named with its object's path, $.seeding."""
        text = _text_of(small_protocol).replace('"seed": 7', '"seed": 7, "seed": 8')
        assert text.count('"seed": ') == 2
        _refused(_raw(tmp_path, text), tmp_path, "duplicate key 'seed'", "@ $.seeding")

    def test_duplicate_top_level_key(self, small_protocol: dict[str, Any], tmp_path: Path) -> None:
        """A repeated top-level key is named at $."""
        text = _text_of(small_protocol).replace('"id": "small"', '"id": "small", "id": "other"')
        _refused(_raw(tmp_path, text), tmp_path, "duplicate key 'id'", "@ $")

    @pytest.mark.parametrize(
        ("token", "key", "path"),
        [
            ("NaN", '"level": 0.95', "$.interval.level"),
            ("Infinity", '"level": 0.95', "$.interval.level"),
            ("-Infinity", '"runs_per_condition": 8', "$.runs_per_condition"),
        ],
    )
    def test_non_finite_constants(
        self, small_protocol: dict[str, Any], tmp_path: Path, token: str, key: str, path: str
    ) -> None:
        """NaN and ±Infinity written as raw JSON text are refused at their path."""
        text = _text_of(small_protocol)
        assert key in text
        name = key.split(":")[0]
        text = text.replace(key, f"{name}: {token}")
        _refused(_raw(tmp_path, text), tmp_path, f"{token} is not a JSON number", f"@ {path}")

    def test_not_json(self, tmp_path: Path) -> None:
        """Text that is not JSON is refused at $ with where the parse stopped."""
        _refused(_raw(tmp_path, "schema = 'repro.protocol/1'\n"), tmp_path, "not JSON", "@ $")

    def test_truncated_json(self, small_protocol: dict[str, Any], tmp_path: Path) -> None:
        """A protocol cut off half way is refused as not JSON."""
        text = _text_of(small_protocol)
        _refused(_raw(tmp_path, text[: len(text) // 2]), tmp_path, "not JSON", "@ $")

    def test_not_utf8(self, small_protocol: dict[str, Any], tmp_path: Path) -> None:
        """Bytes that are not UTF-8 (a Latin-1 title) are refused as such at $."""
        data = _text_of(small_protocol).replace("Small test study", "Étude").encode("latin-1")
        _refused(_raw(tmp_path, data), tmp_path, "not UTF-8", "@ $")

    def test_not_an_object(self, tmp_path: Path) -> None:
        """A JSON array at the top is refused as not an object at $."""
        _refused(_raw(tmp_path, "[]"), tmp_path, "expected an object", "@ $")

    def test_empty_file(self, tmp_path: Path) -> None:
        """An empty file is refused as not JSON."""
        _refused(_raw(tmp_path, b""), tmp_path, "not JSON", "@ $")

    def test_over_size_limit(
        self, small_protocol: dict[str, Any], write_protocol: WriteProtocol, tmp_path: Path
    ) -> None:
        """A protocol one description longer than the limit is refused by its size, at $."""
        small_protocol["description"] = "x" * MAX_PROTOCOL_BYTES
        path = write_protocol(small_protocol)
        assert path.stat().st_size > MAX_PROTOCOL_BYTES
        _refused(path, tmp_path, "over the limit", str(MAX_PROTOCOL_BYTES), "@ $")

    def test_absurd_nesting(
        self, small_protocol: dict[str, Any], write_protocol: WriteProtocol, tmp_path: Path
    ) -> None:
        """Arrays nested 200 deep inside participant params are refused, naming a path there."""
        deep: Any = []
        for _ in range(200):
            deep = [deep]
        small_protocol["participants"][0]["params"] = {"a": deep}
        message = _refused(
            write_protocol(small_protocol),
            tmp_path,
            f"nesting deeper than {canonical.MAX_DEPTH} levels",
            "@ $.participants[0].params.a[0]",
        )
        assert message.count("[0]") >= canonical.MAX_DEPTH - 4

    def test_huge_integer(self, small_protocol: dict[str, Any], tmp_path: Path) -> None:
        """An integer beyond 64 bits is refused at its path rather than mangled."""
        text = _text_of(small_protocol).replace('"seed": 7', '"seed": ' + "9" * 30)
        _refused(_raw(tmp_path, text), tmp_path, "64-bit", "@ $.seeding.seed")


class TestWrongTypes:
    """Values of the wrong JSON type are refused at their path, without coercion."""

    @pytest.mark.parametrize(
        ("edit", "path"),
        [
            (lambda p: p.update(runs_per_condition="8"), "$.runs_per_condition"),
            (lambda p: p.update(runs_per_condition=8.0), "$.runs_per_condition"),
            (lambda p: p["seeding"].update(seed=True), "$.seeding.seed"),
            (lambda p: p.update(matrix={"name": "env_id", "levels": ["CartPole-v1"]}), "$.matrix"),
            (lambda p: p.update(participants="random"), "$.participants"),
            (lambda p: p["matrix"][0].update(levels=["CartPole-v1", 1.5]), "$.matrix[0].levels[1]"),
            (lambda p: p.update(title=None), "$.title"),
            (lambda p: p["interval"].update(level="95%"), "$.interval.level"),
        ],
        ids=[
            "string-count",
            "float-count",
            "bool-seed",
            "object-matrix",
            "string-participants",
            "float-level-name",
            "null-title",
            "string-interval-level",
        ],
    )
    def test_wrong_type(
        self,
        small_protocol: dict[str, Any],
        write_protocol: WriteProtocol,
        tmp_path: Path,
        edit: Callable[[dict[str, Any]], None],
        path: str,
    ) -> None:
        """A value of the wrong type is refused as such, naming its path."""
        edit(small_protocol)
        message = _refused(write_protocol(small_protocol), tmp_path, "expected ", f"@ {path}")
        assert message.endswith(f"@ {path}")

    def test_missing_required_key(
        self, small_protocol: dict[str, Any], write_protocol: WriteProtocol, tmp_path: Path
    ) -> None:
        """A required key left out is named at its path."""
        del small_protocol["seeding"]["mode"]
        _refused(write_protocol(small_protocol), tmp_path, "required key missing", "$.seeding.mode")

    @pytest.mark.parametrize(
        ("edit", "field", "parent"),
        OUT_OF_RANGE,
        ids=OUT_OF_RANGE_IDS,
    )
    def test_out_of_range_names_field_path(
        self,
        small_protocol: dict[str, Any],
        write_protocol: WriteProtocol,
        tmp_path: Path,
        edit: Callable[[dict[str, Any]], None],
        field: str,
        parent: str,
    ) -> None:
        """An out-of-range value is refused, naming the field, at the JSON path of the field
        itself."""
        edit(small_protocol)
        path = f"{parent}.{field}"
        message = _refused(write_protocol(small_protocol), tmp_path, f"protocol: {field} ", "must")
        assert message.endswith(f"@ {path}") or f"@ {path};" in message, message


class TestInconsistentProtocols:
    """Well-typed protocols that name things that do not exist are refused before any write."""

    def test_unknown_adapter(
        self, small_protocol: dict[str, Any], write_protocol: WriteProtocol, tmp_path: Path
    ) -> None:
        """An adapter name nobody registered is refused at $.adapter.name."""
        small_protocol["adapter"]["name"] = "no-such-sim"
        _refused(
            write_protocol(small_protocol),
            tmp_path,
            "unknown adapter 'no-such-sim'",
            "@ $.adapter.name",
        )

    def test_unknown_environment(
        self, small_protocol: dict[str, Any], write_protocol: WriteProtocol, tmp_path: Path
    ) -> None:
        """An env id Gymnasium does not know is refused at its level's path."""
        small_protocol["matrix"][0]["levels"][1] = "NoSuchEnv-v0"
        _refused(write_protocol(small_protocol), tmp_path, "NoSuchEnv", "@ $.matrix[0].levels[1]")

    def test_unknown_factor(
        self, small_protocol: dict[str, Any], write_protocol: WriteProtocol, tmp_path: Path
    ) -> None:
        """A factor the adapter does not understand is refused at its name."""
        small_protocol["matrix"].append({"name": "gravity", "levels": [1, 2]})
        _refused(write_protocol(small_protocol), tmp_path, "gravity", "@ $.matrix[1].name")

    def test_unknown_adapter_option(
        self, small_protocol: dict[str, Any], write_protocol: WriteProtocol, tmp_path: Path
    ) -> None:
        """An adapter option the gymnasium adapter does not take is refused."""
        small_protocol["adapter"]["options"] = {"render": "human"}
        _refused(write_protocol(small_protocol), tmp_path, "render", "@ $.adapter.options")

    def test_action_outside_space(
        self, small_protocol: dict[str, Any], write_protocol: WriteProtocol, tmp_path: Path
    ) -> None:
        """A constant action outside an environment's action space is refused at its path."""
        small_protocol["participants"][1]["params"]["action"] = 7
        _refused(write_protocol(small_protocol), tmp_path, "@ $.participants[1].params.action")

    def test_exclusion_of_unknown_slot(
        self, small_protocol: dict[str, Any], write_protocol: WriteProtocol, tmp_path: Path
    ) -> None:
        """An exclusion naming a slot that the plan does not have is refused at its slot."""
        small_protocol["exclusions"] = [
            {"slot": "c00-r0001", "reason": "known bad seed"},
            {"slot": "c09-r0000", "reason": "typo"},
        ]
        _refused(
            write_protocol(small_protocol),
            tmp_path,
            "unknown slot 'c09-r0000'",
            "@ $.exclusions[1].slot",
        )

    def test_slot_excluded_twice(
        self, small_protocol: dict[str, Any], write_protocol: WriteProtocol, tmp_path: Path
    ) -> None:
        """The same slot excluded twice is refused at the second exclusion."""
        small_protocol["exclusions"] = [
            {"slot": "c00-r0001", "reason": "a"},
            {"slot": "c00-r0001", "reason": "b"},
        ]
        _refused(write_protocol(small_protocol), tmp_path, "@ $.exclusions[1].slot")

    def test_published_condition_matches_nothing(
        self, small_protocol: dict[str, Any], write_protocol: WriteProtocol, tmp_path: Path
    ) -> None:
        """A published figure whose factors match no condition is refused at its factors."""
        small_protocol["published"] = {
            "citation": {"title": "A paper", "url": "https://example.org/paper"},
            "decimals": 1,
            "conditions": [
                {"factors": {"env_id": "CartPole-v1"}, "participant": "random", "mean": 22.0},
                {"factors": {"env_id": "Acrobot-v1"}, "participant": "random", "mean": -500.0},
            ],
        }
        _refused(
            write_protocol(small_protocol),
            tmp_path,
            "matches no condition",
            "@ $.published.conditions[1].factors",
        )

    def test_duplicate_participant(
        self, small_protocol: dict[str, Any], write_protocol: WriteProtocol, tmp_path: Path
    ) -> None:
        """Two participants with one id are refused at the second."""
        small_protocol["participants"][1]["id"] = "random"
        _refused(write_protocol(small_protocol), tmp_path, "@ $.participants[1].id")


class TestPaths:
    """The protocol path must be a file and the output root must be fresh."""

    def test_existing_out_directory(
        self, small_protocol: dict[str, Any], write_protocol: WriteProtocol, tmp_path: Path
    ) -> None:
        """An existing --out directory is refused with exit 2 and left exactly as it was."""
        out = tmp_path / "out"
        out.mkdir()
        (out / "keep.txt").write_text("precious\n", "utf-8")
        (out / "data").mkdir()
        (out / "data" / "old.json").write_bytes(b"{}\n")
        before = {
            p.relative_to(out).as_posix(): (p.read_bytes() if p.is_file() else None)
            for p in out.rglob("*")
        }
        result = _study(write_protocol(small_protocol), out)
        assert result.exit_code == 2, result.output
        assert "already exists" in _flat(result.stderr)
        after = {
            p.relative_to(out).as_posix(): (p.read_bytes() if p.is_file() else None)
            for p in out.rglob("*")
        }
        assert after == before

    def test_existing_empty_out_directory(
        self, small_protocol: dict[str, Any], write_protocol: WriteProtocol, tmp_path: Path
    ) -> None:
        """Even an empty --out directory is refused and stays empty."""
        out = tmp_path / "out"
        out.mkdir()
        result = _study(write_protocol(small_protocol), out)
        assert result.exit_code == 2, result.output
        assert "already exists" in _flat(result.stderr)
        assert list(out.iterdir()) == []

    def test_existing_out_file(
        self, small_protocol: dict[str, Any], write_protocol: WriteProtocol, tmp_path: Path
    ) -> None:
        """An existing regular file at --out is refused and not overwritten."""
        out = tmp_path / "out"
        out.write_bytes(b"not yours\n")
        result = _study(write_protocol(small_protocol), out)
        assert result.exit_code == 2, result.output
        assert "already exists" in _flat(result.stderr)
        assert out.read_bytes() == b"not yours\n"

    def test_dangling_symlink_out(
        self, small_protocol: dict[str, Any], write_protocol: WriteProtocol, tmp_path: Path
    ) -> None:
        """A dangling symlink at --out counts as existing: nothing is created at its target."""
        out = tmp_path / "out"
        target = tmp_path / "elsewhere"
        out.symlink_to(target)
        result = _study(write_protocol(small_protocol), out)
        assert result.exit_code == 2, result.output
        assert "already exists" in _flat(result.stderr)
        assert not target.exists()

    def test_missing_protocol_file(self, tmp_path: Path) -> None:
        """A protocol path that does not exist exits 2 and names the path."""
        _refused(tmp_path / "nope.json", tmp_path, "nope.json", "not a readable file")

    def test_protocol_is_a_directory(self, tmp_path: Path) -> None:
        """A directory given as the protocol exits 2."""
        directory = tmp_path / "proto"
        directory.mkdir()
        _refused(directory, tmp_path, "not a readable file")


class TestCanonicalLoads:
    """repro.canonical.loads names the path of every strictness violation."""

    @pytest.mark.parametrize(
        ("text", "path"),
        [
            (b'{"a": [{"x": 1}, {"y": 1, "y": 2}]}', "@ $.a[1]"),
            (b'{"a": [{"x": 1}, {"b": [{}, {"k": 1, "k": 1}]}]}', "@ $.a[1].b[1]"),
            (b'[{"x": 1}, [{"z": 0, "z": 0}]]', "@ $[1][0]"),
            (b'{"weird key": {"d": 1, "d": 2}}', '@ $["weird key"]'),
            (b'{"a": 1, "a": 2}', "@ $"),
        ],
    )
    def test_duplicate_key_path(self, text: bytes, path: str) -> None:
        """A duplicate key anywhere is refused, naming the path of the object that repeats it."""
        with pytest.raises(BadInput) as info:
            canonical.loads(text, what="doc")
        message = str(info.value)
        assert message.startswith("doc: duplicate key")
        assert message.endswith(path)

    @pytest.mark.parametrize(
        ("text", "message"),
        [
            (b'{"a": [1, NaN]}', "NaN is not a JSON number @ $.a[1]"),
            (b'{"a": {"b": -Infinity}}', "-Infinity is not a JSON number @ $.a.b"),
            (b'{"a": [' + b"9" * 25 + b"]}", "integer out of 64-bit range @ $.a[0]"),
            (b"\xff{}", "not UTF-8 (byte 0) @ $"),
            (b'{"a": ["x", "\\ud800"]}', "string with a lone surrogate (no UTF-8 form) @ $.a[1]"),
            (
                b'{"a": {"\\udc00": 1}}',
                'key with a lone surrogate (no UTF-8 form) @ $.a["\\udc00"]',
            ),
            (b'{"a": {"b": 1e400}}', "number too large for a 64-bit float @ $.a.b"),
        ],
    )
    def test_other_refusals(self, text: bytes, message: str) -> None:
        """NaN, Infinity, huge integers, non-UTF-8 bytes, lone surrogates and numbers that overflow
        a double are refused at their path."""
        with pytest.raises(BadInput, match=r"^doc: ") as info:
            canonical.loads(text, what="doc")
        assert str(info.value).endswith(message)

    def test_depth_limit(self) -> None:
        """MAX_DEPTH levels parse; one more is refused at the path of the deepest container."""
        ok = b"[" * canonical.MAX_DEPTH + b"]" * canonical.MAX_DEPTH
        assert canonical.loads(ok) is not None
        deep = b"[" * (canonical.MAX_DEPTH + 1) + b"]" * (canonical.MAX_DEPTH + 1)
        with pytest.raises(BadInput) as info:
            canonical.loads(deep)
        assert str(info.value).endswith("@ $" + "[0]" * canonical.MAX_DEPTH)

    def test_size_limit(self) -> None:
        """Input over max_bytes is refused before parsing."""
        with pytest.raises(BadInput, match="over the limit of 8 bytes @ \\$"):
            canonical.loads(b'{"a": 12345}', max_bytes=8)
