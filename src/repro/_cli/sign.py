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
    """Sign what a verified bundle claims: an in-toto statement in a DSSE envelope, written
    beside the bag as signatures/<key>.bundle.dsse.json.

    Its subject is the bundle's sha256 (so every file is covered); its predicate the protocol,
    the reproduction class, the estimand with its interval, the contrasts' verdicts and repro's
    version. Several signatures (the author's, a reviewer's) sit side by side; check them with
    repro verify --trusted-key."""
    # Lazy: `repro --help` imports this module; only `repro sign` loads cryptography.
    from repro._bundle.signatures import load_signing_key, sign_bundle
    from repro.verify import open_verified

    signing = load_signing_key(key)
    path = sign_bundle(bundle, key, open_verified)
    emit(f"signed {bundle}: wrote {path} (key {signing.public.fingerprint})")
