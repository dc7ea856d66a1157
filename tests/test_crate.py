"""RO-Crate metadata: every bundle's payload is an RO-Crate 1.1 that conforms to the Process Run
Crate profile, which ro-crate-py reads offline; each attempt that ran is a CreateAction with its
instrument, object, result, times and status; and ``repro verify`` re-derives the crate, as
the version it declares (and checks the attempt times it is made from)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, TypeVar

import pytest
from attrs import evolve

from conftest import ROOT, SMALL, _Quiet, study_once
from forge import rederive, reseal
from repro._derive.crate import NO_LICENCE, CrateBuilder, release_page
from repro._execute.studies import prepare, study
from repro._json.serde import structure, to_bytes
from repro._protocol.freeze import freeze
from repro._protocol.load import parse_protocol
from repro.models import Environment, FrozenProtocol, Ledger, Source
from repro.verify import verify

rocrate = pytest.importorskip("rocrate.rocrate", reason="ro-crate-py is a test dependency")

PROFILE = "https://w3id.org/ro/wfrun/process/0.5"
#: The small protocol's frozen sha256, as repro computed it before protocols could name authors.
SMALL_SHA256 = "d6e7cb020e7f55c12e9372073f39ddc4cbd64d1cf89e1fbcf0faea29f1b0fc57"
FAULTY_HARNESS = ROOT / "tests" / "harness" / "bad_harness.py"
T = TypeVar("T")


def _graph(bundle: Path) -> dict[str, dict[str, Any]]:
    data = json.loads((bundle / "data" / "ro-crate-metadata.json").read_text("utf-8"))
    return {entity["@id"]: entity for entity in data["@graph"]}


def _runs(bundle: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line)
        for path in sorted((bundle / "data" / "runs").glob("*.jsonl"))
        for line in path.read_text("utf-8").splitlines()
    ]


@pytest.fixture(scope="module")
def faulty_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A command study with a licence whose attempts are valid, failed and invalid, and one
    slot excluded before sealing."""
    tmp = tmp_path_factory.mktemp("crate")
    protocol = {
        "schema": "repro.protocol/1",
        "id": "crate-faults",
        "title": "Crate with faults",
        "description": "valid, failed and invalid attempts",
        "license": "CC-BY-4.0",
        # Relative to the protocol's folder, where it is copied: an absolute host path is
        # refused as a disclosure.
        "adapter": {"name": "command", "options": {"harness": FAULTY_HARNESS.name}},
        "matrix": [{"name": "case", "levels": ["one"]}],
        "participants": [
            {"id": mode, "kind": "agent", "params": {"mode": mode}}
            for mode in ("ok", "exit", "garbage")
        ],
        "runs_per_condition": 2,
        "seeding": {"mode": "per-run", "seed": 3},
        "measure": {"name": "outcome_value", "key": "score", "description": "score"},
        "estimand": "mean-of-condition-means",
        "interval": {"method": "normal", "level": 0.95},
        "retry": {"max_attempts": 2, "timeout_seconds": 30},
        "exclusions": [{"slot": "c00-r0001", "reason": "declared before sealing"}],
    }
    path = tmp / "protocol.json"
    path.write_text(json.dumps(protocol), "utf-8")
    shutil.copy(FAULTY_HARNESS, tmp / FAULTY_HARNESS.name)
    study(prepare(path, {}), tmp / "bundle", _Quiet())
    return tmp / "bundle"


def test_ro_crate_py_reads_the_crate_offline(small_bundle: Path) -> None:
    """ro-crate-py opens the payload as a crate: its root dataset has a name, a description and
    a datePublished, conforms to the Process Run Crate profile, and every file it lists exists."""
    crate = rocrate.ROCrate(small_bundle / "data")
    root = crate.root_dataset
    assert root["name"] == "Small test study"
    assert root["description"] and root["datePublished"]
    assert root["conformsTo"].id == PROFILE
    for part in root["hasPart"]:
        assert (small_bundle / "data" / part.id).is_file(), part.id
    listed = {part.id for part in root["hasPart"]}
    on_disk = {
        p.relative_to(small_bundle / "data").as_posix()
        for p in (small_bundle / "data").rglob("*")
        if p.is_file() and p.name != "ro-crate-metadata.json"
    }
    assert listed == on_disk


@pytest.mark.slow
def test_every_attempt_that_ran_is_a_create_action(faulty_bundle: Path) -> None:
    """One CreateAction per attempt that ran (none for the declared exclusion), each with the
    adapter as instrument, its partition as object, its runs file as result, start <= end (to
    the millisecond, +00:00), and Completed for a valid run, Failed with the cause as error for
    a failed or invalid one; the protocol's licence is the root's."""
    graph = _graph(faulty_bundle)
    runs = _runs(faulty_bundle)
    ran = [r for r in runs if not (r["cause"] or "").startswith("excluded before sealing")]
    actions = {k: v for k, v in graph.items() if v["@type"] == "CreateAction"}
    assert sorted(actions) == sorted(f"#{r['attempt_id']}" for r in ran)
    assert {r["status"] for r in ran} == {"valid", "failed", "invalid"}
    for record in ran:
        action = actions[f"#{record['attempt_id']}"]
        assert action["instrument"] == {"@id": "#adapter"}
        partition = record["condition"]
        assert action["object"] == {"@id": f"plans/{partition}.json"}
        assert action["result"] == {"@id": f"runs/{partition}.jsonl"}
        assert action["startTime"] <= action["endTime"]
        assert action["startTime"].endswith("+00:00") and len(action["startTime"]) == 29
        status = action["actionStatus"]
        if record["status"] == "valid":
            assert status == "http://schema.org/CompletedActionStatus"
            assert "error" not in action
        else:
            assert status == "http://schema.org/FailedActionStatus"
            assert action["error"] == record["cause"]
    root = graph["./"]
    assert root["license"] == {"@id": "https://spdx.org/licenses/CC-BY-4.0"}
    assert sorted(m["@id"] for m in root["mentions"]) == sorted(actions)
    assert graph["#adapter"]["@type"] == "SoftwareApplication"


def test_the_times_file_holds_one_line_per_attempt_that_ran(faulty_bundle: Path) -> None:
    """times/<partition>.jsonl has the attempt IDs of the runs file, but the declared
    exclusion's, in the same order."""
    for runs_file in sorted((faulty_bundle / "data" / "runs").glob("*.jsonl")):
        records = [json.loads(line) for line in runs_file.read_text("utf-8").splitlines()]
        times_file = faulty_bundle / "data" / "times" / runs_file.name
        times = [json.loads(line) for line in times_file.read_text("utf-8").splitlines()]
        expected = [
            r["attempt_id"]
            for r in records
            if not (r["cause"] or "").startswith("excluded before sealing")
        ]
        assert [t["attempt_id"] for t in times] == expected


def _rewrite_first_line(path: Path, change: Any) -> None:
    if isinstance(change, bytes):  # a whole-file edit: the first occurrence becomes another
        path.write_bytes(path.read_bytes().replace(change, change.upper(), 1))
        return
    lines = path.read_text("utf-8").splitlines(keepends=True)
    value = json.loads(lines[0])
    change(value)
    lines[0] = json.dumps(value, sort_keys=True, separators=(",", ":")) + "\n"
    path.write_text("".join(lines), "utf-8")


@pytest.mark.parametrize(
    ("file", "change", "what"),
    [
        (
            "ro-crate-metadata.json",
            b"CompletedActionStatus",
            "RO-Crate metadata differs from its re-derivation",
        ),
        (
            "times/c00.jsonl",
            lambda t: t.update(finished_utc="2000-01-01T00:00:00.000000Z"),
            "ends before it starts",
        ),
        (
            "times/c00.jsonl",
            lambda t: t.update(attempt_id="c00-r0009-a1"),
            "times do not match the attempts that ran",
        ),
        (
            "times/c00.jsonl",
            lambda t: t.update(started_utc="yesterday"),
            "must be a UTC time",
        ),
    ],
)
def test_verify_rederives_the_crate_and_checks_the_times(
    small_bundle: Path, tmp_path: Path, file: str, change: Any, what: str
) -> None:
    """A changed crate, or times that end before they start, name another attempt or are not
    UTC times, are named even with the manifests regenerated."""
    root = tmp_path / "bundle"
    shutil.copytree(small_bundle, root)
    _rewrite_first_line(root / "data" / file, change)
    reseal(root)
    findings = verify(root)
    assert any(what in f.what or what in f.found for f in findings), [f.as_dict() for f in findings]


#: Authors and a publisher as a protocol names them: a person with an ORCID iD (ORCID's own
#: example iD, a fictitious researcher), an organization with a made-up ROR ID (its check
#: digits are not checked) and a web page, and the
#: publisher, the same organization.
_ORGANIZATION = {
    "kind": "organization",
    "name": "Example University",
    "ror": "https://ror.org/0abcdef12",
    "url": "https://example.org/",
}
CREDITED = {
    **SMALL,
    "id": "credited",
    "authors": [
        {
            "kind": "person",
            "name": "Josiah Carberry",
            "orcid": "https://orcid.org/0000-0002-1825-0097",
        },
        {"kind": "person", "name": "A. N. Other"},
        _ORGANIZATION,
    ],
    "publisher": _ORGANIZATION,
}


@pytest.fixture(scope="module")
def credited_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A bundle of the small protocol that names its authors and publisher."""
    return study_once(tmp_path_factory, "credited", CREDITED)


def test_the_root_names_the_protocols_authors_and_publisher(credited_bundle: Path) -> None:
    """Each author is a Person or an Organization entity, identified by its ORCID iD or ROR ID
    where given (locally where not), in the protocol's order; the publisher named as an author
    too is that author's entity; ro-crate-py reads them; verify re-derives the crate."""
    graph = _graph(credited_bundle)
    root = graph["./"]
    assert root["author"] == [
        {"@id": "https://orcid.org/0000-0002-1825-0097"},
        {"@id": "#author-2"},
        {"@id": "https://ror.org/0abcdef12"},
    ]
    assert root["publisher"] == {"@id": "https://ror.org/0abcdef12"}
    assert graph["https://orcid.org/0000-0002-1825-0097"] == {
        "@id": "https://orcid.org/0000-0002-1825-0097",
        "@type": "Person",
        "name": "Josiah Carberry",
    }
    assert graph["#author-2"] == {"@id": "#author-2", "@type": "Person", "name": "A. N. Other"}
    assert graph["https://ror.org/0abcdef12"] == {
        "@id": "https://ror.org/0abcdef12",
        "@type": "Organization",
        "name": "Example University",
        "url": "https://example.org/",
    }
    crate = rocrate.ROCrate(credited_bundle / "data")
    assert [a["name"] for a in crate.root_dataset["author"]] == [
        "Josiah Carberry",
        "A. N. Other",
        "Example University",
    ]
    assert verify(credited_bundle) == []


def test_a_protocol_naming_none_says_nothing_of_them(small_bundle: Path) -> None:
    """A protocol that names no author or publisher: the root has neither, and no Person or
    Organization is made up (the crate's bytes are what they were before protocols could name
    them: docs/examples/quick-start-bundle, written before, still verifies,
    tests/test_distribution.py)."""
    graph = _graph(small_bundle)
    assert "author" not in graph["./"] and "publisher" not in graph["./"]
    assert not [e for e in graph.values() if e["@type"] in ("Person", "Organization")]


def test_absent_authors_leave_the_frozen_protocol_as_it_was() -> None:
    """authors and publisher are left out of the frozen form while they hold their defaults, so
    a protocol that names neither (or names them empty) keeps its digest, pinned here as the
    small protocol's before protocols could name them; naming them changes it."""
    plain = freeze(parse_protocol(json.dumps(SMALL).encode()))
    empty = freeze(parse_protocol(json.dumps({**SMALL, "authors": [], "publisher": None}).encode()))
    assert empty == plain
    assert b'"authors"' not in to_bytes(plain.protocol)
    assert b'"publisher"' not in to_bytes(plain.protocol)
    assert plain.sha256 == SMALL_SHA256
    credited = freeze(parse_protocol(json.dumps(CREDITED | {"id": "small"}).encode()))
    assert credited.sha256 != plain.sha256


def test_a_missing_times_file_is_named(small_bundle: Path, tmp_path: Path) -> None:
    """Without a partition's times file the bundle does not verify, and the file is named."""
    root = tmp_path / "bundle"
    shutil.copytree(small_bundle, root)
    (root / "data" / "times" / "c00.jsonl").unlink()
    reseal(root)
    assert any(f.file == "data/times/c00.jsonl" for f in verify(root))


def _crate(bundle: Path) -> list[dict[str, Any]]:
    graph: list[dict[str, Any]] = json.loads((bundle / "data/ro-crate-metadata.json").read_bytes())[
        "@graph"
    ]
    return graph


class TestVersions:
    """The crate versions: what a study writes, and what verify re-derives."""

    def test_a_study_writes_version_3(self, small_bundle: Path) -> None:
        """A new bundle's crate declares repro.crate/3, names the RO-Crate 1.1 context alone,
        and, its protocol naming no licence, says no licence is granted."""
        head = (small_bundle / "data/ro-crate-metadata.json").read_bytes().split(b"\n")[0]
        assert head == b'{"@context":"https://w3id.org/ro/crate/1.1/context","@graph":['
        entities = _graph(small_bundle)
        assert entities["ro-crate-metadata.json"]["version"] == "repro.crate/3"
        assert entities["./"]["license"] == {"@id": NO_LICENCE["@id"]}
        assert entities[NO_LICENCE["@id"]] == NO_LICENCE

    @pytest.mark.parametrize("version", [1, 2])
    def test_an_earlier_versions_crate_still_verifies(
        self, small_bundle: Path, tmp_path: Path, version: int
    ) -> None:
        """A bundle whose crate is version 1 (no marker, both contexts, no licence) or version 2
        (no release pages), as repro wrote it before, verifies: verify re-derives the version
        the crate declares."""
        root = tmp_path / "bundle"
        shutil.copytree(small_bundle, root)
        rederive(root, crate_version=version)
        descriptor, *rest = _crate(root)
        assert descriptor.get("version") == (None if version == 1 else "repro.crate/2")
        assert "#repro" in {e["@id"] for e in rest}
        assert not [e for e in rest if "url" in e]
        assert verify(root) == []

    @pytest.mark.parametrize(("made", "claimed"), [(1, 2), (2, 1), (2, 3), (3, 2)])
    def test_a_crate_whose_marker_lies_is_named(
        self, small_bundle: Path, tmp_path: Path, made: int, claimed: int
    ) -> None:
        """A crate given another version's marker (or stripped of its own) is re-derived as the
        version it claims and differs from it: crate-differs."""
        root = tmp_path / "bundle"
        shutil.copytree(small_bundle, root)
        rederive(root, crate_version=made)
        path = root / "data/ro-crate-metadata.json"

        def descriptor(version: int) -> bytes:
            plain = b'"conformsTo":{"@id":"https://w3id.org/ro/crate/1.1"}}'
            return plain if version == 1 else plain[:-1] + b',"version":"repro.crate/%d"}' % version

        data = path.read_bytes()
        assert descriptor(made) in data
        path.write_bytes(data.replace(descriptor(made), descriptor(claimed), 1))
        reseal(root)
        assert [f.code for f in verify(root)] == ["crate-differs"]

    def test_an_unknown_marker_is_named(self, small_bundle: Path, tmp_path: Path) -> None:
        """A crate that declares a version verify does not know is named (crate-version) and
        not compared."""
        root = tmp_path / "bundle"
        shutil.copytree(small_bundle, root)
        path = root / "data/ro-crate-metadata.json"
        path.write_bytes(path.read_bytes().replace(b"repro.crate/3", b"repro.crate/9", 1))
        reseal(root)
        assert [f.code for f in verify(root)] == ["crate-version"]


class TestReleasePages:
    """Version 3: each package repro's own adapters pin from the package index, at a release, is
    identified by the index's page of that release, made from the name and version the bundle
    records; anything else (repro itself included) keeps its local identifier and no url."""

    @pytest.mark.parametrize(
        ("name", "version", "page"),
        [
            ("numpy", "2.4.6", "https://pypi.org/project/numpy/2.4.6/"),
            ("gymnasium", "1.4.0", "https://pypi.org/project/gymnasium/1.4.0/"),
            ("inspect_ai", "0.3.285", "https://pypi.org/project/inspect-ai/0.3.285/"),
            ("csle-cyborg", "0.0.3", "https://pypi.org/project/csle-cyborg/0.0.3/"),
            ("jsonschema", "4.23.0", "https://pypi.org/project/jsonschema/4.23.0/"),
            ("NumPy", "2.0rc1", "https://pypi.org/project/numpy/2.0rc1/"),
            ("numpy", "1.0.post2", "https://pypi.org/project/numpy/1.0.post2/"),
            # not releases: a development release, a local build, an epoch, an unnormalized form
            ("numpy", "2.4.6+local", None),
            ("numpy", "1.0.dev1", None),
            ("numpy", "1!2.0", None),
            ("numpy", "01.0", None),
            ("numpy", None, None),
            # not a distribution name
            ("../numpy", "1.0", None),
            ("a b", "1.0", None),
            # not one repro knows the index publishes: repro itself (not on the index), upstream
            # CybORG (installed from a clone), a third party's package
            ("repro-evidence", "0.1.0", None),
            ("CybORG", "2.1", None),
            ("zope.interface", "7.0", None),
        ],
    )
    def test_release_page(self, name: str, version: str | None, page: str | None) -> None:
        assert release_page(name, version) == page

    def test_repro_and_the_pinned_packages(self, small_bundle: Path) -> None:
        """Each package the ledger pins is its release page; repro stays local, at the version
        environment.json records, and is every action's agent; the adapter stays local,
        requiring the packages."""
        graph = _graph(small_bundle)
        environment = json.loads((small_bundle / "data/environment.json").read_bytes())
        ledger = json.loads((small_bundle / "data/source-ledger.json").read_bytes())
        assert "url" not in graph["#repro"] and graph["#repro"]["name"] == "repro"
        assert graph["#repro"]["softwareVersion"] == environment["repro_version"]
        packages = [s for s in ledger["sources"] if s["kind"] == "package"]
        pages = [f"https://pypi.org/project/{s['name']}/{s['version']}/" for s in packages]
        assert [s["name"] for s in packages] == ["gymnasium", "numpy"]
        for source, page in zip(packages, pages, strict=True):
            assert graph[page]["url"] == page
            assert graph[page]["softwareVersion"] == source["version"]
        adapter = graph["#adapter"]
        assert "url" not in adapter
        assert adapter["softwareRequirements"] == [{"@id": page} for page in pages]
        actions = [e for e in graph.values() if e["@type"] == "CreateAction"]
        assert actions and all(a["agent"] == {"@id": "#repro"} for a in actions)
        assert not {"#package-gymnasium", "#package-numpy"} & set(graph)

    def test_repro_s_version_is_the_bundle_s(self, small_bundle: Path, tmp_path: Path) -> None:
        """repro's softwareVersion is what environment.json records (a development build
        here), not the verifier's own version: the crate, re-derived from that file,
        verifies."""
        root = tmp_path / "bundle"
        shutil.copytree(small_bundle, root)
        path = root / "data/environment.json"
        environment = json.loads(path.read_bytes())
        environment["repro_version"] = "0.1.dev3+g1a2b3c4"
        path.write_bytes(to_bytes(environment))
        rederive(root)
        graph = _graph(root)
        assert graph["#repro"]["softwareVersion"] == "0.1.dev3+g1a2b3c4"
        assert verify(root) == []

    def test_a_package_not_at_a_release_or_named_twice_stays_local(
        self, small_bundle: Path
    ) -> None:
        """A package the ledger pins at a local build, one repro does not know the index
        publishes (repro's own distribution), and one at a release whose page another entity
        already has as its identifier (a package pinned twice), keeps its local identifier and
        no url."""

        def read(name: str, cls: type[T]) -> T:
            return structure(json.loads((small_bundle / name).read_bytes()), cls, what=name)

        fp = read("data/protocol.json", FrozenProtocol)
        env = read("data/environment.json", Environment)
        ledger = read("data/source-ledger.json", Ledger)
        gymnasium = ledger.sources[0]
        assert gymnasium.name == "gymnasium"
        sources = (
            gymnasium,
            Source(kind="package", role="rng", name="numpy", version="2.4.6+local"),
            Source(kind="package", role="x", name="repro_evidence", version=env.repro_version),
            Source(kind="package", role="y", name="Gymnasium", version=gymnasium.version),
        )
        head = CrateBuilder(fp, evolve(ledger, sources=sources), env, []).head()
        graph = json.loads(head + b"\n]}")["@graph"]
        software = [e for e in graph if e["@type"] == "SoftwareApplication"]
        page = f"https://pypi.org/project/gymnasium/{gymnasium.version}/"
        assert [(e["@id"], e.get("url")) for e in software] == [
            ("#repro", None),
            ("#adapter", None),
            (page, page),
            ("#package-numpy", None),
            ("#package-repro_evidence", None),
            ("#package-Gymnasium", None),
        ]
