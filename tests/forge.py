"""What a forger does to a bundle's BagIt layer after changing its payload, for the tests."""

from __future__ import annotations

import hashlib
from pathlib import Path

from repro.bundle import MANIFEST, TAGMANIFEST, manifest_text

__all__ = ["reseal", "retag", "sha256"]


def sha256(path: Path) -> str:
    """Hex sha256 of the file at ``path``."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def retag(root: Path) -> None:
    """Rewrite the tag manifest over the current tag files."""
    tags = {name: sha256(root / name) for name in ("bagit.txt", "bag-info.txt", MANIFEST)}
    (root / TAGMANIFEST).write_bytes(manifest_text(tags))


def reseal(root: Path) -> None:
    """Rewrite Payload-Oxum, the payload manifest and the tag manifest so that BagIt integrity
    holds over whatever regular files data/ now holds."""
    payload = sorted(p for p in (root / "data").rglob("*") if p.is_file() and not p.is_symlink())
    digests = {p.relative_to(root).as_posix(): sha256(p) for p in payload}
    (root / MANIFEST).write_bytes(manifest_text(digests))
    oxum = f"Payload-Oxum: {sum(p.stat().st_size for p in payload)}.{len(payload)}"
    info = (root / "bag-info.txt").read_text("utf-8").splitlines()
    info = [oxum if line.startswith("Payload-Oxum:") else line for line in info]
    (root / "bag-info.txt").write_text("\n".join(info) + "\n", "utf-8")
    retag(root)
