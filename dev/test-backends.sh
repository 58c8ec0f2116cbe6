#!/bin/sh
# The suite, on files and on PostgreSQL, as three uvu processes side by side:
# the files pass and the PostgreSQL pass of everything but the folders in
# SIDE, and those folders on both backends, one after the other. Each process
# spends much of its time waiting (daemons starting, retries falling due,
# Chromium rendering), so three at once fill the machine's cores better than
# two. The files pass prints as it goes; the others write to logs printed
# whole once it is over, so that uvu's summaries (which .ci/run adds up) never
# interleave. `sh dev/test-backends.sh files|postgres|side` runs one of them.
set -u
SIDE='console|robustness'
# PostgreSQL only: they need several daemons on one database, or its outage.
POSTGRES_ONLY='multi-daemon|multi-daemon-deliveries|postgres-outage'
# Not in the PostgreSQL pass (docs/decisions.md, "Testing both backends"): unit
# tests of file-only modules, and files that run each case on both backends.
FILES_PASS_ONLY='^store-conformance-|^(dead-letter-file|delivery-records|delivery-transport|event-log|line-index|outbox|postgres-migrations|postgres-operations|store)\.test\.ts$'

uvu() { node --import tsx dev/uvu.mjs "$@"; }
files() { uvu test '\.test\.ts$' --ignore "^($SIDE)(/|$)|^($POSTGRES_ONLY)\."; }
postgres() { PLATFORM_TEST_BACKEND=postgres uvu test '\.test\.ts$' --ignore "^($SIDE)(/|$)|$FILES_PASS_ONLY"; }
side() {
  uvu test "^($SIDE)/.*\.test\.ts$"
  on_files=$?
  PLATFORM_TEST_BACKEND=postgres uvu test "^($SIDE)/.*\.test\.ts$"
  return $((on_files | $?))
}

case "${1:-all}" in
  files) files; exit ;;
  postgres) postgres; exit ;;
  side) side; exit ;;
esac

postgres_log=$(mktemp)
side_log=$(mktemp)
trap 'rm -f "$postgres_log" "$side_log"' EXIT
postgres >"$postgres_log" 2>&1 &
postgres_pid=$!
side >"$side_log" 2>&1 &
side_pid=$!
files
files_status=$?
wait "$postgres_pid"
postgres_status=$?
wait "$side_pid"
side_status=$?
cat "$postgres_log" "$side_log"
exit $((files_status | postgres_status | side_status))
