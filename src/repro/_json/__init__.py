"""The JSON layer: strict reading and canonical bytes (:mod:`~repro._json.canonical`), the one
strict cattrs converter between JSON and the models (:mod:`~repro._json.serde`), and the JSON
Schemas of the protocol and of every bundle file (:mod:`~repro._json.schemas`)."""

from repro._json.canonical import dumps, json_path, loads, sha256_hex
from repro._json.serde import structure, to_bytes, unstructure

__all__ = ["dumps", "json_path", "loads", "sha256_hex", "structure", "to_bytes", "unstructure"]
