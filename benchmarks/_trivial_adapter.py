"""A trivial adapter for the benchmarks: each run is one step of reward 1, computed in no
time, so that what a benchmark measures is repro's own cost. Registered by the benchmark that
uses it (a ``.dist-info`` on the path), as ``trivial``."""

from __future__ import annotations

from collections.abc import Mapping

from repro.adapters import AdapterFacts, Condition, Evidence, Frozen, PlanEntry, Protocol


class _Session:
    def __init__(self) -> None:
        self.contract: dict[str, object] = {}

    def run(self, entry: PlanEntry) -> Evidence:
        return Evidence(step_rewards=(1.0,), reported_measure=None, steps=1, trace_sha256=None)

    def close(self) -> None:
        pass


class TrivialAdapter:
    """One step of reward 1 per run."""

    name = "trivial"
    simulator_modules: tuple[str, ...] = ()

    def freeze(self, protocol: Protocol, options: Mapping[str, str]) -> Frozen:
        facts = AdapterFacts(
            name=self.name,
            version="0",
            observation_scope="none",
            observation_note="a benchmark adapter",
            measure_inputs="step-rewards",
        )
        return Frozen(facts=facts, sources=())

    def open(self, protocol: Protocol, condition: Condition, frozen: Frozen) -> _Session:
        return _Session()
