#!/usr/bin/env bash
# Follows docs/first-agent.md as a new user would, on a fresh copy of the
# repository: runs every ```sh block of the page in order, exactly as written,
# except that the block starting `ora dev` runs in the background (the page
# says "in a second terminal"), the page's port 8090 becomes a free port and
# `<signal_id>` becomes the id the previous `ora send` printed. Then checks
# what the page promises: the wave succeeded, the triage note is on disk, the
# second delivery is a duplicate.
#
# It runs in `make test` through readme/walkthrough_test.go.
set -euo pipefail
unset MAKELEVEL MAKEFLAGS MFLAGS

src=$(cd "$(dirname "$0")/.." && pwd)
page=${1:-docs/first-agent.md}
work=$(mktemp -d "${TMPDIR:-/tmp}/ora-docs.XXXXXX")
fail() { echo "docs-walkthrough: FAIL: $*" >&2; exit 1; }
# cleanup (pids, work), free_port, fresh_copy
. "$src/scripts/walkthrough-lib.sh"

fresh_copy "$work/ora"
cd "$work/ora"

# The page's ```sh blocks, one file each.
mkdir "$work/blocks"
awk -v dir="$work/blocks" '
  /^```sh$/ { n++; f = sprintf("%s/%02d.sh", dir, n); inblock = 1; next }
  /^```$/ && inblock { inblock = 0; close(f); next }
  inblock { print > f }
' "$page"
count=$(ls "$work/blocks" | wc -l)
[ "$count" -ge 5 ] || fail "$page has only $count sh blocks"

port=$(free_port)
signal=""
outputs=()
for b in "$work"/blocks/*.sh; do
  sed -i "s/127\.0\.0\.1:8090/127.0.0.1:$port/g" "$b"
  [ -n "$signal" ] && sed -i "s/<signal_id>/$signal/g" "$b"
  echo "== $(basename "$b"): $(head -n 1 "$b")"
  if grep -q '^\./bin/ora dev ' "$b"; then
    setsid bash "$b" >dev.log 2>&1 &
    pids+=($!)
    for _ in $(seq 1 300); do grep -q "listening on http://127.0.0.1:$port" dev.log && break; sleep 0.2; done
    grep -q "listening on http://127.0.0.1:$port" dev.log || { cat dev.log >&2; fail "ora dev did not start"; }
    continue
  fi
  if grep -q '^\./bin/ora trace ' "$b"; then
    # The wave runs asynchronously: trace until it has ended, as a user would re-run it.
    for _ in $(seq 1 150); do out=$(bash "$b" 2>&1) || true; grep -q ": SUCCEEDED" <<<"$out" && break; sleep 0.2; done
  else
    out=$(bash "$b" 2>&1) || { echo "$out" >&2; fail "block $(basename "$b") failed"; }
  fi
  printf '%s\n' "$out"
  outputs+=("$out")
  if grep -q '^\./bin/ora send ' "$b"; then
    id=$(sed -n 's/.*"signal_id": *"\([^"]*\)".*/\1/p' <<<"$out")
    [ -n "$id" ] || fail "ora send printed no signal_id: $out"
    if [ -z "$signal" ]; then signal=$id; else
      [ "$id" = "$signal" ] || fail "the second delivery got a new signal $id (first $signal)"
      grep -q '"duplicate": *true' <<<"$out" || fail "the second delivery was not a duplicate: $out"
    fi
  fi
done

all=$(printf '%s\n' "${outputs[@]}")
grep -q "wave $signal: SUCCEEDED" <<<"$all" || fail "the wave never succeeded"
grep -q "triage-new-issue" <<<"$all" || fail "the trace does not name the rule"
grep -q '"title": *"Wave stuck in Escalate after approval"' <<<"$all" || fail "the triage note is not on disk"
echo "docs-walkthrough: $page passed"
