#!/bin/sh
# The suite's two passes, on files and on PostgreSQL, run side by side: each
# spends much of its time waiting (daemons starting, retries falling due,
# Chromium), so together they take about three quarters of the time one after
# the other. The files pass prints as it goes; the PostgreSQL pass writes to a
# log printed whole once the files pass is over, so that uvu's summaries
# (which .ci/run adds up) are never interleaved.
set -u
log=$(mktemp)
trap 'rm -f "$log"' EXIT
npm run test:postgres >"$log" 2>&1 &
postgres_pid=$!
npm run test:files
files=$?
wait "$postgres_pid"
postgres=$?
cat "$log"
exit $((files | postgres))
