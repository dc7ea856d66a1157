"""A misbehaving harness for repro's command adapter tests: the participant's ``params.mode``
says how it misbehaves (``ok`` answers a valid outcome)."""

from __future__ import annotations

import getpass
import json
import os
import sys
import time
from pathlib import Path


def main() -> None:
    spec = json.loads(sys.stdin.read())
    mode = spec["participant"]["params"].get("mode", "ok")
    sys.stderr.write("secret stderr text /home/someone/.ssh/id_rsa\n")
    if mode == "exit":
        sys.exit(3)
    if mode == "sleep":
        time.sleep(60)
    if mode == "nap":  # a run that only waits, briefly
        time.sleep(0.5)
    if mode == "garbage":
        sys.stdout.write("this is not json")
        return
    if mode == "array":
        sys.stdout.write("[1, 2]")
        return
    if mode == "schema":
        sys.stdout.write(json.dumps({"score": "high"}))
        return
    if mode == "pad":  # a spec too long for a pipe to hold at once still arrives whole
        sys.stdout.write(json.dumps({"score": len(spec["participant"]["params"]["pad"])}))
        return
    if mode == "echo-host":  # a careless harness that tells where and by whom it ran
        text = f"ran as {getpass.getuser()} in {Path.cwd()} with home {Path.home()}"
        sys.stdout.write(json.dumps({"score": 1, "text": text, "pid": os.getpid() % 1}))
        return
    sys.stdout.write(json.dumps({"score": spec["seed"] % 7, "echo": spec["slot"]}))


if __name__ == "__main__":
    main()
