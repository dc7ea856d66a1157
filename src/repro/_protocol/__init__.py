"""The protocol: load a protocol file strictly (comments removed, every field validated;
:mod:`~repro._protocol.load`), check that its parts agree with each other
(:mod:`~repro._protocol.rules`, a scored protocol's in :mod:`~repro._protocol.scoring_rules`, its
contrasts' in :mod:`~repro._protocol.contrasts`, its ``rl`` section's in
:mod:`~repro._protocol.rl_rules`), and freeze it with its digest before anything runs
(:mod:`~repro._protocol.freeze`).

Each is imported as the submodule it is: the package imports none of them, so that a module that
needs one constant (the verifier's limits need :data:`~repro._protocol.work.MAX_DERIVATION_WORK`)
does not import the loader and the models with it."""
