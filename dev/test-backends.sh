#!/bin/sh
# The suite's two passes, on files and on PostgreSQL, run side by side: each
# spends much of its time waiting (daemons starting, retries falling due,
# Chromium), so together they take about three quarters of the time one after
# the other. Each pass writes to its own log, printed whole when it ends, so
# that uvu's summaries (which .ci/run adds up) are never interleaved.
set -u
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
npm run test:files >"$logs/files" 2>&1 &
files_pid=$!
npm run test:postgres >"$logs/postgres" 2>&1 &
postgres_pid=$!
wait "$files_pid"
files=$?
cat "$logs/files"
wait "$postgres_pid"
postgres=$?
cat "$logs/postgres"
exit $((files | postgres))
