"""What a signed bundle claims in the standard predicate types other tools read, beside repro's
own: SLSA provenance v1 (what ran, with what, when) and an in-toto test-result (what the study's
own checks found), each a pure function of the bundle's parsed files that ``repro sign`` signs and
``repro verify`` derives again to compare; and the names the SLSA verification summary (VSA)
that ``repro verify --attest`` and ``repro audit --sign`` write uses
(:mod:`repro._bundle.summaries`).

Nothing here claims more than the files say. The provenance's builder is repro run by whoever
signs the statement, on a machine nobody vouches for: it claims no SLSA build level. The
test-result's tests are the verdicts the bundle records (its tiers, its reproduction class,
its contrasts and its publish gates), sorted into passed, warned and failed by a stated rule
(:func:`test_result_predicate`)."""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from repro import DISTRIBUTION

if TYPE_CHECKING:
    from repro.models import ContrastsFile, Environment, FrozenProtocol, Ledger, Scores, Tiers
    from repro.models._derived import Source

__all__ = [
    "BUILDER_ID",
    "PROVENANCE",
    "STANDARD_TYPES",
    "STUDY_BUILD_TYPE",
    "TEST_RESULT",
    "VERIFIER_ID",
    "VERIFIER_VERSION",
    "VSA_TYPE",
    "named_information",
    "protocol_descriptor",
    "provenance_predicate",
    "purl",
    "test_result_predicate",
]

#: The kind (in a signature file's name) of the SLSA provenance statement.
PROVENANCE = "provenance"
#: The kind of the in-toto test-result statement.
TEST_RESULT = "test-result"
#: The standard predicate types repro signs, by kind: a reader that knows the type needs nothing
#: of repro's.
STANDARD_TYPES = {
    PROVENANCE: "https://slsa.dev/provenance/v1",
    TEST_RESULT: "https://in-toto.io/attestation/test-result/v0.1",
}
#: The SLSA Verification Summary's predicate type.
VSA_TYPE = "https://slsa.dev/verification_summary/v1"
#: The provenance's build type: a repro study of a frozen protocol (docs/bundle-format.md says
#: what its parameters are). ``.invalid`` never resolves (RFC 2606): a name, not a page.
STUDY_BUILD_TYPE = "https://repro.invalid/build-type/study/v1"
#: Who built: ``repro study``, as run by whoever signs the statement.
BUILDER_ID = "https://repro.invalid/builder/repro-study/v1"
#: Who verified: ``repro verify`` or ``repro audit``, as run by whoever signs the summary.
VERIFIER_ID = "https://repro.invalid/verifier/repro/v1"
#: The VSA's verifier has only an id (VSA 1.0, 1.1); its version goes in an extension field,
#: whose name a producer must make a URI: ``{"repro-evidence": VERSION}``.
VERIFIER_VERSION = "https://repro.invalid/verifier/version"
#: How each recorded verdict counts as a test: passed, warned or failed (None: not a test).
_TIER = {"pass": "passed", "weakened": "warned", "fail": "failed"}
_REPRODUCTION = {"exact": "passed", "bounded": "passed", "failed": "failed", "unavailable": None}
_CONTRAST = {"holds": "passed", "inconclusive": "warned", "does-not-hold": "failed"}


def purl(name: str, version: str) -> str:
    """The package URL (purl) of the Python package ``name`` at ``version``: the name lowered
    with ``_`` and ``.`` as ``-`` (as the purl type ``pypi`` says), the version percent-encoded."""
    normal = name.lower().replace("_", "-").replace(".", "-")
    return f"pkg:pypi/{quote(normal, safe='-')}@{quote(version, safe='.-_~!')}"


def named_information(sha256: str) -> str:
    """The ``ni`` URI (RFC 6920) of a sha256 digest given in hex: a standard name for the bytes
    with that digest, wherever they are."""
    raw = base64.urlsafe_b64encode(bytes.fromhex(sha256)).decode().rstrip("=")
    return f"ni:///sha-256;{raw}"


def protocol_descriptor(protocol: FrozenProtocol) -> dict[str, Any]:
    """The frozen protocol as an in-toto ResourceDescriptor: its id and its sha256."""
    return {"name": protocol.protocol.id, "digest": {"sha256": protocol.sha256}}


def _source_descriptor(source: Source) -> dict[str, Any]:
    """A pinned source as a ResourceDescriptor: a package by its purl, a file by its sha256, a
    directory by name, its tree digest (repro's, not a digest of bytes) an annotation."""
    out: dict[str, Any] = {"name": source.name}
    notes: dict[str, Any] = {"role": source.role, "kind": source.kind}
    if source.kind == "package" and source.version is not None:
        out["uri"] = purl(source.name, source.version)
    elif source.kind == "file" and source.sha256 is not None:
        out["digest"] = {"sha256": source.sha256}
    elif source.sha256 is not None:
        notes["tree_sha256"] = source.sha256
    if source.size is not None:
        notes["size"] = source.size
    return out | {"annotations": notes}


def provenance_predicate(
    protocol: FrozenProtocol, ledger: Ledger, environment: Environment
) -> dict[str, Any]:
    """SLSA provenance v1 of the study, from its bundle's files: the build type
    :data:`STUDY_BUILD_TYPE`, whose one external parameter is the frozen protocol; as internal
    parameters, the adapter and how the runs were spread (the environment's backend and
    workers, when it records them); the ledger's pinned sources as resolved dependencies; repro
    as the builder, at its version, with the environment's packages as its dependencies; and
    the study's start and end (UTC, to the second)."""
    internal: dict[str, Any] = {
        "adapter": {"name": ledger.adapter.name, "version": ledger.adapter.version}
    }
    if environment.backend is not None:
        internal["execution"] = {"backend": environment.backend, "workers": environment.workers}
    return {
        "buildDefinition": {
            "buildType": STUDY_BUILD_TYPE,
            "externalParameters": {"protocol": protocol_descriptor(protocol)},
            "internalParameters": internal,
            "resolvedDependencies": [_source_descriptor(s) for s in ledger.sources],
        },
        "runDetails": {
            "builder": {
                "id": BUILDER_ID,
                "version": {DISTRIBUTION: environment.repro_version},
                "builderDependencies": [
                    {"name": name, "uri": purl(name, version)}
                    for name, version in sorted(environment.packages.items())
                ],
            },
            "metadata": {
                "startedOn": environment.started_utc,
                "finishedOn": environment.finished_utc,
            },
        },
    }


def test_result_predicate(
    protocol: FrozenProtocol,
    tiers: Tiers,
    contrasts: ContrastsFile | None,
    scores: Scores | None,
) -> dict[str, Any]:
    """The in-toto test-result (v0.1) of the study, from its bundle's files: each verdict the
    bundle records is one test, named ``tier/NAME`` (pass passed, weakened warned, fail
    failed), ``reproduction/CLASS`` (exact and bounded passed, failed failed; unavailable, with
    no published figure to reproduce, is no test), ``contrast/ID`` (holds passed, inconclusive
    warned, does-not-hold failed) and ``gate/NAME`` (holds passed, else failed). The result is
    FAILED when a test failed, else WARNED when one warned, else PASSED; the configuration is
    the frozen protocol."""
    found: dict[str, list[str]] = {"passed": [], "warned": [], "failed": []}
    for tier in tiers.tiers:
        found[_TIER[tier.verdict]].append(f"tier/{tier.name}")
    verdict = tiers.reproduction.verdict
    if (how := _REPRODUCTION[verdict]) is not None:
        found[how].append(f"reproduction/{verdict}")
    for contrast in contrasts.contrasts if contrasts is not None else ():
        found[_CONTRAST[contrast.verdict]].append(f"contrast/{contrast.id}")
    for gate in scores.gates if scores is not None else ():
        found["passed" if gate.holds else "failed"].append(f"gate/{gate.name}")
    result = "FAILED" if found["failed"] else "WARNED" if found["warned"] else "PASSED"
    return {
        "result": result,
        "configuration": [protocol_descriptor(protocol)],
        "passedTests": found["passed"],
        "warnedTests": found["warned"],
        "failedTests": found["failed"],
    }
