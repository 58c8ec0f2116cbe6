#!/bin/sh
# The suite runs as three uvu processes side by side: the files pass and the
# PostgreSQL pass of everything but the browser and robustness tests, and
# those two folders on both backends, one after the other. Each process spends
# much of its time waiting (daemons starting, retries falling due, Chromium
# rendering), so three at once fill the machine's cores better than two. The
# files pass prints as it goes; the others write to logs printed whole once it
# is over, so that uvu's summaries (which .ci/run adds up) never interleave.
set -u
uvu="node --import tsx node_modules/uvu/bin.js"
side='^(console|robustness)/.*\.test\.ts$'
postgres_log=$(mktemp)
side_log=$(mktemp)
trap 'rm -f "$postgres_log" "$side_log"' EXIT

npm run test:postgres >"$postgres_log" 2>&1 &
postgres_pid=$!
{
  $uvu test "$side" --no-color
  files=$?
  PLATFORM_TEST_BACKEND=postgres $uvu test "$side" --no-color
  exit $((files | $?))
} >"$side_log" 2>&1 &
side_pid=$!

npm run test:files
files=$?
wait "$postgres_pid"
postgres=$?
wait "$side_pid"
side=$?
cat "$postgres_log" "$side_log"
exit $((files | postgres | side))
