"""Write the two made-up skills-evaluation records that protocols/recorded-skills-baseline.json
and protocols/recorded-skills-candidate.json read: a captured baseline of a skill at release 1.0
(``skills-baseline-1.0.json``) and a candidate at 1.1 (``skills-candidate-1.1.json``), in the
style of the baselines skills-evaluation harnesses keep: one object per trial of each case,
with the rubric score, whether the case passed, and the agent's summary that the checks read.

Nothing here is anyone's real results. The candidate is the baseline with one seeded
regression: on ``csv-clean`` it stops mentioning encoding detection in four of its six trials.
Run from the repository's top: ``python protocols/records/make_skills_records.py``; the files
come out the same every time.
"""

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
TRIALS = 6

#: Each case: the concepts a good summary names, and the rubric score of each trial.
CASES = {
    "pdf-extract": (["table detection", "page order"], [0.9, 0.85, 0.95, 0.9, 0.8, 0.9]),
    "csv-clean": (["encoding detection", "header repair"], [0.8, 0.85, 0.9, 0.8, 0.75, 0.85]),
    "chart-render": (["axis labels", "colour scale"], [0.7, 0.75, 0.8, 0.7, 0.85, 0.75]),
    "api-pagination": (["cursor tokens", "rate limits"], [0.6, 0.7, 0.65, 0.7, 0.6, 0.75]),
}


def _runs(regressed: bool) -> list[dict[str, object]]:
    runs: list[dict[str, object]] = []
    for case, (concepts, scores) in CASES.items():
        for trial in range(TRIALS):
            named = list(concepts)
            score = scores[trial]
            if regressed and case == "csv-clean" and trial < 4:
                named = named[1:]
                score = round(score - 0.3, 2)
            runs.append(
                {
                    "case": case,
                    "participant": "skill",
                    "replicate": trial,
                    "scenario_version": 1,
                    "score": score,
                    "passed": score >= 0.6,
                    "summary": "Handled the request: " + "; ".join(named) + ".",
                }
            )
    return runs


def main() -> None:
    for name, regressed in (("skills-baseline-1.0", False), ("skills-candidate-1.1", True)):
        path = HERE / f"{name}.json"
        path.write_text(json.dumps(_runs(regressed), indent=1) + "\n")
        print(path.name)


if __name__ == "__main__":
    main()
