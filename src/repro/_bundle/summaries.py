"""Verification summaries: the signed SLSA VSA (:func:`repro._bundle.attestations.vsa_predicate`)
that ``repro verify --attest KEY`` and ``repro audit --sign KEY`` write about a bundle they
checked, as a DSSE envelope of an in-toto Statement in a file of their own, outside the bundle
(a summary says who checked what, when: it is the checker's statement, not the bundle's, and a
later check writes a later one).

A summary names its policy by URI and by the sha256 of the policy's canonical JSON
(:func:`verify_policy`, :func:`audit_policy`), which anyone can write down again from what the
summary's maker ran: the limits and trusted keys of a verify, the sample of an audit."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from repro import DISTRIBUTION
from repro._bundle.attestations import (
    VERIFIER_ID,
    VERIFIER_VERSION,
    VSA_TYPE,
    named_information,
)
from repro._bundle.signatures import (
    STATEMENT_TYPE,
    SUBJECT_NAME,
    envelope_bytes,
    load_signing_key,
)
from repro._files import write_atomically
from repro._json import canonical
from repro.errors import BadInput

__all__ = [
    "AUDIT_POLICY",
    "VERIFY_POLICY",
    "audit_policy",
    "check_summary_path",
    "default_summary_path",
    "policy_digest",
    "summary_path",
    "summary_statement",
    "verify_policy",
    "write_summary",
]

#: The policy of ``repro verify``: every check it makes of a bundle (docs/guarantees.md), within
#: the limits, against the trusted keys that its canonical JSON names.
VERIFY_POLICY = "https://repro.invalid/policy/verify/v1"
#: The policy of ``repro audit``: the drawn slots re-executed and compared byte for byte.
AUDIT_POLICY = "https://repro.invalid/policy/audit/v1"


def verify_policy(limits: dict[str, Any], trusted: Sequence[str]) -> dict[str, Any]:
    """The policy a verify checked a bundle against: :data:`VERIFY_POLICY`, its limits (by
    name) and the fingerprints of the keys it trusted, sorted."""
    return {"policy": VERIFY_POLICY, "limits": limits, "trusted_keys": sorted(set(trusted))}


def audit_policy(sample: int | None) -> dict[str, Any]:
    """The policy an audit checked a bundle against: :data:`AUDIT_POLICY` and how many slots
    it drew (``"all"`` for every slot that ran)."""
    return {"policy": AUDIT_POLICY, "sample": "all" if sample is None else sample}


def policy_digest(policy: dict[str, Any]) -> tuple[str, str]:
    """The policy's URI and the sha256 of its canonical JSON (no final newline)."""
    data = canonical.dumps(policy, newline=False)
    return str(policy["policy"]), hashlib.sha256(data).hexdigest()


def summary_statement(
    bundle_sha256: str,
    *,
    version: str,
    policy: dict[str, Any],
    inputs: Sequence[tuple[str, str]],
    passed: bool,
    levels: Sequence[str],
    now: datetime | None = None,
) -> dict[str, Any]:
    """The in-toto Statement of an SLSA verification summary (v1) about the bundle whose
    identity is ``bundle_sha256`` (its subject the tag manifest, as every statement about a
    bundle): the verifier (:data:`VERIFIER_ID`, with repro's ``version`` in the extension
    field :data:`VERIFIER_VERSION`: VSA 1.0 and 1.1 give a verifier only an id), when (now, or
    ``now``; UTC, to the second), the bundle again (the ``ni`` URI of its identity: no host
    path), the policy (its URI and the sha256 of its canonical JSON), the attestations it used
    (``inputs``: path in the bundle, sha256; the field is absent when none was), and the result
    with, when it ``passed``, ``levels`` (repro's own, ``REPRO_...``, as the VSA lets a
    verifier name its own; ``FAILED`` alone otherwise)."""
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    uri, digest = policy_digest(policy)
    predicate: dict[str, Any] = {
        "verifier": {"id": VERIFIER_ID, VERIFIER_VERSION: {DISTRIBUTION: version}},
        "timeVerified": moment.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "resourceUri": named_information(bundle_sha256),
        "policy": {"uri": uri, "digest": {"sha256": digest}},
        "verificationResult": "PASSED" if passed else "FAILED",
        "verifiedLevels": list(levels) if passed else ["FAILED"],
    }
    if inputs:  # optional; absent when none was used
        predicate["inputAttestations"] = [{"uri": u, "digest": {"sha256": d}} for u, d in inputs]
    return {
        "_type": STATEMENT_TYPE,
        "subject": [{"name": SUBJECT_NAME, "digest": {"sha256": bundle_sha256}}],
        "predicateType": VSA_TYPE,
        "predicate": predicate,
    }


def default_summary_path(bundle: Path, suffix: str) -> Path:
    """Where a summary of ``bundle`` goes when no path is given: beside it, its name and
    ``suffix`` (``bundle`` -> ``bundle.vsa.dsse.json``)."""
    absolute = bundle.absolute()
    return absolute.parent / f"{absolute.name}{suffix}"


def summary_path(bundle: Path, key_path: Path, given: Path | None, suffix: str) -> Path:
    """Where a summary of ``bundle`` signed with the private key at ``key_path`` is written,
    checked before anything is read: the key loads, and the file (``given``, else
    :func:`default_summary_path` with ``suffix``) is new, in a directory that is there. Raises
    :class:`BadInput`."""
    load_signing_key(key_path)
    path = given if given is not None else default_summary_path(bundle, suffix)
    check_summary_path(path)
    return path


def check_summary_path(path: Path) -> None:
    """Raise :class:`BadInput` unless a summary can be written at ``path``: nothing there yet
    (a summary is never replaced) and a directory to write it in."""
    if os.path.lexists(path):
        raise BadInput(
            f"{path} exists: repro never replaces a verification summary (remove it, or name "
            "another file with --vsa)"
        )
    if not path.parent.is_dir():
        raise BadInput(f"{path.parent}: no such directory to write the verification summary in")


def write_summary(path: Path, statement: dict[str, Any], key_path: Path) -> Path:
    """Sign ``statement`` with the private key at ``key_path`` and write its DSSE envelope to
    ``path`` (mode 0644: it is for others to read), atomically, never over a file that is
    there; return ``path``. Raises :class:`BadInput`."""
    key = load_signing_key(key_path)
    check_summary_path(path)
    data = envelope_bytes(statement, key)
    try:
        with write_atomically(path, mode=0o644, exact_mode=False, place=os.link) as fh:
            fh.write(data)
    except FileExistsError:
        check_summary_path(path)  # it appeared meanwhile: named as such
        raise
    except OSError as exc:
        raise BadInput(f"{path}: cannot write ({exc.strerror or type(exc).__name__})") from None
    return path
