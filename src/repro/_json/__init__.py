"""The JSON layer: strict reading and canonical bytes (:mod:`~repro._json.canonical`), the one
strict cattrs converter between JSON and the models (:mod:`~repro._json.serde`), and the JSON
Schemas of the protocol and of every bundle file (:mod:`~repro._json.schemas`).

Each is imported as the submodule it is: the package imports none of them, so that a module that
needs canonical JSON alone (the verifier's limits, the BagIt stage) does not import the models
that the converter brings."""
