#!/usr/bin/env bash
# write-report: the github-triage agent's local function.
#
# ora runs it after the label and the comment succeeded, with the invocation
# event as JSON on standard input:
#   {"decision_id":"dec_...","wave_id":"sig_...","action_index":2,
#    "idempotency_key":"dec_.../2","function":"write-report",
#    "payload":{"repo":"acme/app","issue":42,"title":"...","author":"...","url":"..."}}
# It writes reports/<owner>-<repo>-<issue>.md in its working folder
# (<data_dir>/functions/write-report/) and prints the report's path.
# A retry carries the same idempotency key: the report is then left as it is.
set -euo pipefail

event=$(cat)
field() { # the first string or number value of key $1 in the event
  printf '%s' "$event" | sed -n 's/.*"'"$1"'":"\{0,1\}\([^",}]*\).*/\1/p' | head -n 1
}
repo=$(field repo)
issue=$(field issue)
case "$issue" in
  ''|*[!0-9]*) echo "write-report: the payload has no issue number" >&2; exit 2 ;;
esac
case "$repo" in
  */*) ;;
  *) echo "write-report: the payload has no owner/repo" >&2; exit 2 ;;
esac

mkdir -p reports
report="reports/${repo//\//-}-${issue}.md"
key=${ORA_IDEMPOTENCY_KEY:-}
if [ -f "$report" ] && grep -qF -- "- idempotency key: $key" "$report"; then
  echo "$report"
  exit 0
fi
tmp=$(mktemp "reports/.report.XXXXXX")
{
  echo "# Triage report: $repo#$issue"
  echo
  echo "- labelled: triage"
  echo "- commented: yes"
  echo "- wave: ${ORA_WAVE_ID:-}"
  echo "- decision: ${ORA_DECISION_ID:-}"
  echo "- idempotency key: $key"
  echo "- written: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo
  echo "## The invocation event"
  echo
  echo '```json'
  printf '%s\n' "$event"
  echo '```'
} >"$tmp"
mv -f "$tmp" "$report"
echo "$report"
