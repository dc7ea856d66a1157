"""``repro sign``: sign what a verified bundle claims."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from repro._cli.output import emit

__all__ = ["sign"]


def sign(
    bundle: Annotated[Path, typer.Argument(help="Sign this bundle directory; it must verify.")],
    key: Annotated[
        Path,
        typer.Option(
            "--key",
            help="Sign with this Ed25519 private key: OpenSSH (ssh-keygen -t ed25519 -f "
            "repro-key -N '') or PEM (openssl genpkey -algorithm ed25519); an encrypted one's "
            "passphrase is read from REPRO_KEY_PASSPHRASE.",
            show_default=False,
        ),
    ],
) -> None:
    """Sign what a verified bundle claims: in-toto statements in DSSE envelopes, written beside
    the bag in signatures/, one file per kind.

    Each statement's subject is the bundle's sha256 (so every file is covered). Three kinds:
    signatures/<key>.bundle.dsse.json, repro's own (the protocol, the reproduction class, the
    estimand with its interval, the contrasts' verdicts, repro's version);
    <key>.provenance.dsse.json, SLSA provenance v1 (the protocol, the pinned sources, repro and
    its packages, the start and end); <key>.test-result.dsse.json, an in-toto test-result (each
    tier, the reproduction class, each contrast and publish gate as a passed, warned or failed
    test). Several signers (the author, a reviewer) sit side by side; check them with
    repro verify --trusted-key."""
    # Lazy: `repro --help` imports this module; only `repro sign` loads cryptography.
    from repro._bundle.signatures import SIGNED_KINDS, load_signing_key, sign_bundle
    from repro.verify import open_verified

    signing = load_signing_key(key)
    paths = sign_bundle(bundle, key, open_verified, SIGNED_KINDS)
    emit(f"signed {bundle} (key {signing.public.fingerprint}):")
    for path in paths:
        emit(f"  wrote {path}")
