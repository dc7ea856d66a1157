"""The JSON layer: strict reading and canonical bytes (:mod:`~repro.json.canonical`), the one
strict cattrs converter between JSON and the models (:mod:`~repro.json.serde`), and the JSON
Schemas of the protocol and of every bundle file (:mod:`~repro.json.schemas`)."""

from repro.json.canonical import dumps, json_path, loads, sha256_hex
from repro.json.serde import structure, to_bytes, unstructure

__all__ = ["dumps", "json_path", "loads", "sha256_hex", "structure", "to_bytes", "unstructure"]
