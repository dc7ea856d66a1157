#!/bin/sh
# A harness for the thread-session tests: it notes its own process ID and that of a child in
# its process group (files in the directory $PIDS), then waits on the child, 300 s.
IFS= read -r spec || :
sleep 300 &
echo "$!" > "$PIDS/child-$$"
echo "$$" > "$PIDS/harness-$$"
wait
