"""rocrate-validator (the roc-validator distribution) validates every kind of bundle's crate
offline: the quick start, Gymnasium, a scored command study, reduced CAGE-2, against the RO-Crate
1.1 and the Process Run Crate 0.5 profiles. Its HTTP cache is seeded with the one JSON-LD
context a version 2 or 3 crate names (tests/data/contexts, CC0), so no request leaves the
process. At the REQUIRED level no issue remains; at the RECOMMENDED level only the checks
docs/bundle-format.md explains ("What checks the crate"): on the quick start, whose protocol
names its author and publisher, only that this Organization has no url (the project has none
to give), and under Process Run Crate 0.5 who ran the study, which repro does not know, and
that repro and the adapter have no web identity (the packages repro's adapters pin have their
releases' pages on the package index); on the others, whose protocols name no author or
publisher, those two instead of the url."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import pytest

from conftest import ROOT, _Quiet
from repro._execute.studies import LocalWorkers, prepare, study

# Slow: validates every kind of bundle's crate.
pytestmark = pytest.mark.slow

if os.environ.get("REPRO_REQUIRE_EXTRAS"):  # CI: the test group has it, never skipped
    import rocrate_validator.services  # noqa: F401
validator = pytest.importorskip("rocrate_validator.services", reason="roc-validator is optional")
requests_cache = pytest.importorskip("requests_cache")
urllib3 = pytest.importorskip("urllib3")
adapters = pytest.importorskip("requests.adapters")

CONTEXTS = {
    "https://w3id.org/ro/crate/1.1/context": ROOT / "tests/data/contexts/ro-crate-1.1.jsonld",
}
PROFILES = ("ro-crate-1.1", "process-run-crate-0.5")
QUICK_START = ROOT / "protocols" / "gymnasium-classic-control.json"

#: The RECOMMENDED checks of the Process Run Crate profile that remain on every bundle, each
#: explained in docs/bundle-format.md ("What checks the crate"):
RUN_CHECKS = {
    # each action's agent is repro, a SoftwareApplication: who ran the study is not recorded;
    "Action agent",
    # repro and the adapter have no url: repro's distribution is not on the package index, and
    # the bundle records the adapter's name and its simulator's version, not the distribution
    # that provides it (each package repro's adapters pin at a release has its release's page);
    "Application url",
    # so their identifiers are local (#repro, #adapter), not web addresses.
    "SoftwareApplication id",
}
#: The checks that name a SoftwareApplication without a web identity.
APPLICATION_CHECKS = {"Application url", "SoftwareApplication id"}
#: The root's author and publisher: a protocol that names none (every protocol here but the
#: quick start) leaves both unsaid, and repro invents neither.
UNCREDITED = {
    "Root Data Entity: `author` property",
    "Root Data Entity: `publisher` property",
}
#: The quick start's protocol names The repro project as its author and publisher, an
#: Organization with no url: the project has no web address to give, and repro invents none.
NO_URL = {"Organization: RECOMMENDED url property"}
EXPLAINED = {
    "quick-start": {"ro-crate-1.1": NO_URL, "process-run-crate-0.5": NO_URL | RUN_CHECKS},
    "uncredited": {
        "ro-crate-1.1": UNCREDITED,
        "process-run-crate-0.5": UNCREDITED | RUN_CHECKS,
    },
}


class _Contexts(adapters.HTTPAdapter):  # type: ignore[misc]
    """Answers a request for a shipped context with its file, and fails any other."""

    def send(self, request: Any, **kwargs: Any) -> Any:
        body = CONTEXTS[request.url].read_bytes()
        raw = urllib3.HTTPResponse(
            body=io.BytesIO(body),
            headers={"Content-Type": "application/ld+json"},
            status=200,
            preload_content=False,
            request_url=request.url,
        )
        return self.build_response(request, raw)


@pytest.fixture(scope="module")
def context_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """rocrate-validator's HTTP cache (requests-cache, SQLite) holding the shipped contexts,
    stored through an adapter that serves only those files."""
    path = tmp_path_factory.mktemp("http-cache") / "cache"
    session = requests_cache.CachedSession(
        cache_name=str(path), backend="sqlite", expire_after=-1, allowable_codes=(200,)
    )
    session.mount("https://", _Contexts())
    session.mount("http://", _Contexts())
    for url in CONTEXTS:
        response = session.get(url)
        assert response.status_code == 200 and not response.from_cache
    session.close()
    return path


@pytest.fixture(scope="module")
def quick_start_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The quick start (protocols/gymnasium-classic-control.json, 200 runs) as it ships."""
    out = tmp_path_factory.mktemp("quick-start") / "bundle"
    study(prepare(QUICK_START, {}), out, _Quiet(), LocalWorkers())
    return out


@pytest.fixture(params=["quick-start", "gymnasium", "scored-command", "cage2-reduced"])
def any_bundle(request: pytest.FixtureRequest) -> tuple[str, Path]:
    """Each kind of bundle, made once, with its kind."""
    name = {
        "quick-start": "quick_start_bundle",
        "gymnasium": "small_bundle",
        "scored-command": "scored_bundle",
    }.get(request.param, "cage2_reduced")
    bundle: Path = request.getfixturevalue(name)
    return request.param, bundle


def _issues(
    bundle: Path, cache: Path, profile: str, severity: str
) -> list[tuple[str, str, str | None]]:
    """(severity, check name, local identifier of the entity it names, if any) of every issue
    rocrate-validator finds in the bundle's crate, offline, at ``severity`` and above."""
    settings = validator.ValidationSettings(
        rocrate_uri=str(bundle / "data"),
        profile_identifier=profile,
        requirement_severity=severity,
        offline=True,
        cache_path=cache,
    )
    result = validator.validate(settings)
    return [
        (i.severity.name, i.check.name, _local(i.violatingEntity, i.violatingPropertyValue))
        for i in result.get_issues()
    ]


def _local(*names: str | None) -> str | None:
    """The local identifier (``#...``) among the names an issue gives of its entity: the
    entity itself (``./#adapter``) or, for a check of the entity's identifier, the value checked
    (resolved against the crate: ``file:///.../data/#adapter``)."""
    return next((n[n.index("#") :] for n in names if n is not None and "#" in n), None)


def _unpublished(bundle: Path) -> set[str]:
    """The local identifiers of the packages the bundle's ledger pins that the package index
    does not publish (upstream CybORG, when a CAGE-2 study ran on it)."""
    ledger = json.loads((bundle / "data" / "source-ledger.json").read_bytes())
    return {f"#package-{s['name']}" for s in ledger["sources"] if s["name"] == "CybORG"}


@pytest.mark.slow
@pytest.mark.parametrize("profile", PROFILES)
def test_no_issue_at_the_required_level(
    any_bundle: tuple[str, Path], context_cache: Path, profile: str
) -> None:
    """Offline, rocrate-validator finds no REQUIRED issue in any kind of bundle, under either
    profile (the root's licence included: the protocols here name none)."""
    _, bundle = any_bundle
    assert _issues(bundle, context_cache, profile, "REQUIRED") == []


@pytest.mark.slow
@pytest.mark.parametrize("profile", PROFILES)
def test_only_explained_issues_at_the_recommended_level(
    any_bundle: tuple[str, Path], context_cache: Path, profile: str
) -> None:
    """At the RECOMMENDED level every issue is RECOMMENDED and one of the checks
    docs/bundle-format.md explains for the bundle's kind, and each of those checks is still
    found (so that a fix shows here and in that page together); the application checks name
    repro and the adapter alone (and a package the index does not publish)."""
    kind, bundle = any_bundle
    issues = _issues(bundle, context_cache, profile, "RECOMMENDED")
    explained = EXPLAINED["quick-start" if kind == "quick-start" else "uncredited"][profile]
    assert {severity for severity, _, _ in issues} <= {"RECOMMENDED"}
    assert {check for _, check, _ in issues} == explained
    for check in APPLICATION_CHECKS & explained:
        named = sorted(str(entity) for _, c, entity in issues if c == check)
        assert named == sorted({"#repro", "#adapter", *_unpublished(bundle)}), check
