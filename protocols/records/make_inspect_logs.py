"""Write the two inspect_ai logs protocols/recorded-inspect.json reads: the arithmetic task of
protocols/inspect_arithmetic.py evaluated by its two mock models (``careful`` and ``hasty``,
offline), three epochs each, with ``inspect_ai.eval``, as JSON logs.

Run from the repository's top: ``uv run --extra inspect python
protocols/records/make_inspect_logs.py``. Two changes are made to what inspect writes, so that
a bundle may carry the logs without failing its disclosure tier:

- ``eval.task_file``, which inspect writes as a path on the machine that ran it (absolute, or
  relative to the folder it ran in), is made relative to protocols/;
- each sample's ``events`` (and ``events_data``) are left out: their JSON-pointer paths
  (``"/output/usage"``) read as host paths to repro's disclosure scan, and the scores do not
  need them. inspect still reads the logs (``inspect_ai.log.read_eval_log``).

A new run writes new IDs and times, so new sha256s for the protocol to pin.
"""

import json
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROTOCOLS = HERE.parent


def main() -> None:
    sys.path.insert(0, str(PROTOCOLS))
    from inspect_ai import eval as inspect_eval
    from inspect_arithmetic import arithmetic, careful, hasty

    for name, model in (("careful", careful()), ("hasty", hasty())):
        with tempfile.TemporaryDirectory() as folder:
            (log,) = inspect_eval(
                arithmetic(),
                model=model,
                epochs=3,
                seed=20261207,
                log_format="json",
                log_dir=folder,
                display="none",
            )
            written = Path(log.location)
            value = json.loads(written.read_bytes())
            task_file = (Path.cwd() / value["eval"]["task_file"]).resolve()
            value["eval"]["task_file"] = task_file.relative_to(PROTOCOLS).as_posix()
            for sample in value["samples"]:
                sample["events"] = []
                sample.pop("events_data", None)
            target = HERE / f"inspect-{name}.json"
            target.write_text(json.dumps(value, indent=2) + "\n")
            shutil.rmtree(folder, ignore_errors=True)
        print(target.relative_to(PROTOCOLS.parent), log.status)


if __name__ == "__main__":
    main()
