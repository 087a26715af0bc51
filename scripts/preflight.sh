#!/usr/bin/env bash
# The Makefile's preflights for the steps that need Docker, AWS or a deployed
# stack: each checks what its step needs and, when something is missing, prints
# one line naming it and exits 1, before any long build or network call.
#
#   scripts/preflight.sh docker-compose        docker and its compose plugin, and a running daemon
#   scripts/preflight.sh localstack URL        LocalStack answering at URL
#   scripts/preflight.sh aws                   AWS credentials and a region (environment or ~/.aws)
#   scripts/preflight.sh e2e ENDPOINT OUTPUTS  a deployed stack to test: outputs file, endpoint reachable, secrets
set -uo pipefail

step=${PREFLIGHT_STEP:-make $1}
fail() { echo "$step: $*" >&2; exit 1; }

# reach URL: succeeds when something answers HTTP at URL (any status).
reach() {
  local err
  err=$(curl -sS -o /dev/null -m "${PREFLIGHT_TIMEOUT:-5}" "$1" 2>&1) && return 0
  err=${err#curl: }
  echo "${err#(*) }"
  return 1
}

case "${1:-}" in
docker-compose)
  command -v docker >/dev/null || fail "docker not found: LocalStack runs in Docker (install Docker Engine with the compose plugin)"
  docker compose version >/dev/null 2>&1 || fail "the docker compose plugin is missing ('docker compose version' fails): install docker-compose-plugin"
  docker info >/dev/null 2>&1 || fail "the Docker daemon is not running or not reachable ('docker info' fails)"
  ;;
localstack)
  url=${2:?URL}
  why=$(reach "$url/_localstack/health") || fail "LocalStack is not answering at $url ($why): run make localstack-up first (needs Docker)"
  ;;
aws)
  creds=
  for v in AWS_ACCESS_KEY_ID AWS_PROFILE AWS_WEB_IDENTITY_TOKEN_FILE AWS_CONTAINER_CREDENTIALS_FULL_URI AWS_CONTAINER_CREDENTIALS_RELATIVE_URI; do
    [ -n "${!v:-}" ] && creds=1
  done
  [ -s "${AWS_SHARED_CREDENTIALS_FILE:-$HOME/.aws/credentials}" ] && creds=1
  grep -qs 'sso_\|credential_process\|role_arn' "${AWS_CONFIG_FILE:-$HOME/.aws/config}" && creds=1
  [ -n "$creds" ] || fail "no AWS credentials found: set AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
  if [ -z "${AWS_REGION:-}${AWS_DEFAULT_REGION:-}" ] && ! grep -qs '^region' "${AWS_CONFIG_FILE:-$HOME/.aws/config}"; then
    fail "no AWS region: set AWS_REGION (e.g. AWS_REGION=us-east-1)"
  fi
  ;;
e2e)
  endpoint=${2:-} outputs=${3:-}
  [ -z "$endpoint$outputs" ] && exit 0 # the suite starts ora dev itself
  if [ -n "$outputs" ]; then
    [ -f "$outputs" ] || fail "OUTPUTS file $outputs not found (make deploy writes outputs.json, make localstack-deploy localstack/outputs.json)"
    if [ -z "$endpoint" ]; then
      endpoint=$(sed -n 's/.*"ApiUrl"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p' "$outputs" | head -n1)
      [ -n "$endpoint" ] || fail "$outputs has no ApiUrl output: is it the outputs file of the Ora stack?"
    fi
  fi
  why=$(reach "$endpoint") || fail "the endpoint $endpoint is not reachable ($why)"
  [ -n "${ORA_E2E_SECRET:-}" ] || fail "ORA_E2E_SECRET is not set: the hmac secret of the \"e2e\" source in the stack's WebhookSecrets (see README, AWS)"
  if [ -z "${ORA_E2E_TOKEN:-}" ] && [ -z "${ORA_E2E_CLIENT_SECRET:-}" ]; then
    fail "set ORA_E2E_TOKEN (a bearer token with ora/ora.approve and ora/orientation.read) or ORA_E2E_CLIENT_SECRET (the Cognito app client's secret, see README, AWS)"
  fi
  ;;
*)
  echo "usage: scripts/preflight.sh docker-compose | localstack URL | aws | e2e ENDPOINT OUTPUTS" >&2
  exit 2
  ;;
esac
