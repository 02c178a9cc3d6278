# gopf — Kopf-style handlers for Go operators on controller-runtime.
# `make help` lists the targets.

# Tools and binaries land in bin/, built from the Go module proxy.
LOCALBIN ?= $(shell pwd)/bin
CONTROLLER_TOOLS_VERSION ?= v0.23.0
CONTROLLER_GEN ?= $(LOCALBIN)/controller-gen-$(CONTROLLER_TOOLS_VERSION)
GOLANGCI_LINT_VERSION ?= v2.15.0
GOLANGCI_LINT ?= $(LOCALBIN)/golangci-lint-$(GOLANGCI_LINT_VERSION)
KUBE_VERSION ?= v1.37.0
ETCD_VERSION ?= v3.6.16
GO ?= go

# The operator `make run` and `make build` work on: an example by name
# (`make run EXAMPLE=timers`) or any main package (`OPERATOR=./cmd/mine`).
EXAMPLE ?= minimal
OPERATOR ?= ./examples/$(EXAMPLE)
# An example with its own API brings its own CRDs and samples.
RUN_FLAGS ?= $(if $(wildcard $(OPERATOR)/config/crd/bases),--crds $(OPERATOR)/config/crd/bases --samples $(OPERATOR)/config/samples)

# envtest assets: an existing KUBEBUILDER_ASSETS wins; otherwise bin/k8s.
ENVTEST_ASSETS = $(shell KUBE_VERSION=$(KUBE_VERSION) ETCD_VERSION=$(ETCD_VERSION) hack/setup-envtest.sh)

SHELL = /usr/bin/env bash -o pipefail
.SHELLFLAGS = -ec

.PHONY: all
all: build

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "\nUsage:\n  make \033[36m<target>\033[0m\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-15s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) } ' $(MAKEFILE_LIST)

##@ Development

.PHONY: manifests
manifests: controller-gen ## Generate CRDs (config/crd/bases) and RBAC (config/rbac) from markers of gopf and $(OPERATOR).
	$(CONTROLLER_GEN) rbac:roleName=manager-role crd paths="./api/...;./reconcile/...;./webhook/...;$(OPERATOR)/..." output:crd:artifacts:config=config/crd/bases

.PHONY: generate
generate: controller-gen ## Generate DeepCopy methods for the API types, and the test kinds (test/kinds) with their CRDs.
	$(CONTROLLER_GEN) object:headerFile="hack/boilerplate.go.txt" paths="./api/..."
	$(CONTROLLER_GEN) object:headerFile="hack/boilerplate.go.txt" crd paths="./test/kinds/..." output:crd:dir=test/kinds/crd

.PHONY: grafana
grafana: ## Generate the Grafana dashboard (config/grafana) and the alerts (config/prometheus/gopf-alerts.yaml) from gopf's metric definitions.
	$(GO) run ./hack/dashboards -src internal/metrics -out .

.PHONY: fmt
fmt: ## Run go fmt.
	$(GO) fmt ./...

.PHONY: vet
vet: ## Run go vet.
	$(GO) vet ./...

.PHONY: lint
lint: golangci-lint ## Run golangci-lint with the linters of .golangci.yml (kubebuilder's set).
	$(GOLANGCI_LINT) run ./...

.PHONY: lint-fix
lint-fix: golangci-lint ## Run golangci-lint and apply the fixes it can make itself.
	$(GOLANGCI_LINT) run --fix ./...

.PHONY: test
# Each Go benchmark runs once too (-benchtime 1x), so that `make bench-go`
# cannot break unnoticed; its figures mean nothing under the race detector.
test: manifests generate vet envtest kustomize ## Run all tests (unit and envtest integration) with the race detector.
	KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" $(GO) test -race -count=1 -bench . -benchtime 1x -timeout 20m ./...

# The fuzz targets of the decoders of untrusted input, as package:target.
# `make test` runs their seeds (testdata/fuzz and f.Add) like any test.
FUZZ_TARGETS ?= ./internal/engine:FuzzStoredState ./internal/scope:FuzzNamespacePatterns ./webhook:FuzzReview ./cmd/kubebuilder-gopf/internal/protocol:FuzzDecode
FUZZTIME ?= 1m
# Extra flags for go test, e.g. FUZZ_FLAGS="-parallel 1" on a busy machine.
FUZZ_FLAGS ?=

# New inputs are minimized for 10s, not go test's 60s, which would eat
# most of a short run. A failing input lands in the package's testdata/fuzz:
# fix the decoder and commit the input as a seed.
.PHONY: fuzz
fuzz: envtest ## Fuzz each decoder for FUZZTIME (default 1m) each.
	@for t in $(FUZZ_TARGETS); do \
	  echo "fuzzing $${t#*:} in $${t%%:*} for $(FUZZTIME)"; \
	  KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" $(GO) test -run '^$$' -fuzz "^$${t#*:}\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 10s $(FUZZ_FLAGS) $${t%%:*} || exit 1; \
	done

# The robustness suite (test/robustness) on random sequences: seeds from the
# clock, kinds and storages chosen by the seed, until GOPF_ROBUSTNESS_DURATION
# is up or a sequence breaks the contract (its seed and the command that runs
# it again are printed). `make test` runs the suite's fixed seeds.
GOPF_ROBUSTNESS_DURATION ?= 30m

.PHONY: robustness
robustness: envtest ## Run random robustness sequences for GOPF_ROBUSTNESS_DURATION (default 30m); prints how many sequences and operations ran.
	KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" GOPF_ROBUSTNESS_DURATION=$(GOPF_ROBUSTNESS_DURATION) $(GO) test -race -count=1 -v -timeout 0 -run '^TestRandomSequences$$' ./test/robustness

# The reference sharder (github.com/timebertt/kubernetes-controller-sharding)
# for sharder-check: a checkout of it (GOPF_SHARDER_SRC), and its binary
# (GOPF_SHARDER_BIN), else built from the checkout into bin/sharder.
GOPF_SHARDER_SRC ?=
GOPF_SHARDER_BIN ?=
# The objects sharder-check handles.
GOPF_SHARDER_OBJECTS ?= 300

.PHONY: sharder-check
sharder-check: envtest ## Run gopf's replicas under the reference sharder (GOPF_SHARDER_SRC: a checkout of it; GOPF_SHARDER_BIN: its binary, else built from the checkout) through creates, a replica joining, a rolling restart and a scale-down during updates, and deletes on GOPF_SHARDER_OBJECTS (300) objects, and check every handler call (one to three minutes).
	@test -n "$(GOPF_SHARDER_SRC)" || { echo "set GOPF_SHARDER_SRC to a checkout of github.com/timebertt/kubernetes-controller-sharding"; exit 1; }
	$(if $(GOPF_SHARDER_BIN),,hack/build-sharder.sh "$(GOPF_SHARDER_SRC)" "$(LOCALBIN)/sharder" >/dev/null)
	GOPF_SHARDER_SRC="$(GOPF_SHARDER_SRC)" GOPF_SHARDER_BIN="$(or $(GOPF_SHARDER_BIN),$(LOCALBIN)/sharder)" \
	  GOPF_SHARDER_OBJECTS=$(GOPF_SHARDER_OBJECTS) KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" $(GO) test -race -count=1 -v -timeout 30m -run '^TestReferenceSharder$$' ./test/bench/sharder

##@ Build

.PHONY: build
build: manifests generate vet ## Build the operator ($(OPERATOR)) and the dev runner into bin/.
	$(GO) build -o $(LOCALBIN)/$(notdir $(OPERATOR)) $(OPERATOR)
	$(GO) build -o $(LOCALBIN)/gopf-dev ./cmd/gopf-dev

.PHONY: run
run: manifests generate envtest ## Run the operator ($(OPERATOR)) against KUBECONFIG, or a local control plane with the samples.
	@$(GO) build -o $(LOCALBIN)/gopf-dev ./cmd/gopf-dev
	KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" $(LOCALBIN)/gopf-dev --operator $(OPERATOR) $(RUN_FLAGS)

##@ Benchmarks

.PHONY: bench
bench: envtest ## Benchmark gopf against hand-written controller-runtime reconcilers, tuned (the verdict's), typed and unstructured, at 1000 objects and in two opposite-order rounds of 5,000, with gopf's finalizer added at admission, across a restart on a typed-status CRD and on Pods, with timers and daemons on 10,000 objects, and new objects beside failing ones (about 49 minutes on 2 cores); writes BENCHMARKS.md. Extra flags: BENCH_FLAGS="-n 200".
	GOPF_BENCH_TARGET=$@ KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" $(GO) run ./test/bench/cmd/bench -markdown BENCHMARKS.md -json bin/bench/results.json $(BENCH_FLAGS)

.PHONY: bench-10k
bench-10k: envtest ## The scale scenario alone at 10,000 objects, gopf against the tuned and the typed baseline, in three rounds in which each operator runs once first, once second and once last (about 35 minutes on 2 cores); writes BENCHMARKS-10k.md.
	GOPF_BENCH_TARGET=$@ KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" $(GO) run ./test/bench/cmd/bench -scenario scale -scale-n 10000 -scale-rounds 3 -operators baseline-tuned,baseline,gopf -markdown BENCHMARKS-10k.md -json bin/bench/results-10k.json $(BENCH_FLAGS)

.PHONY: bench-50k
bench-50k: envtest ## The scale scenario alone at 50,000 objects, with its restart phase (about 45 minutes on 2 cores); writes BENCHMARKS-50k.md.
	GOPF_BENCH_TARGET=$@ KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" $(GO) run ./test/bench/cmd/bench -scenario scale -scale-n 50000 -scale-rounds 1 -phase-timeout 30m -markdown BENCHMARKS-50k.md -json bin/bench/results-50k.json $(BENCH_FLAGS)

# The sharded scenario's size: the issue's 10,000 objects; smaller on a
# busy machine (SHARDED_N=1000).
SHARDED_N ?= 10000

.PHONY: bench-sharded
bench-sharded: envtest ## gopf as 1, 2 and 4 replicas of a shard ring on SHARDED_N objects (default 10,000), a replica joining and one leaving, a rolling update of 4 replicas, and one killed every 30 s (about 30 minutes at 10,000 on 2 cores with -phase-timeout 6m); writes BENCHMARKS-sharded.md.
	GOPF_BENCH_TARGET=$@ KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" $(GO) run ./test/bench/cmd/bench -scenario sharded -sharded-n $(SHARDED_N) -phase-timeout 30m -markdown BENCHMARKS-sharded.md -json bin/bench/results-sharded.json $(BENCH_FLAGS)

.PHONY: bench-sharded-50k
bench-sharded-50k: envtest ## The sharded scenario's scaling runs alone (1, 2 and 4 replicas) at 50,000 objects: each replica's peak RSS against (one replica's - the fixed cost)/N + the fixed cost (about 65 minutes on 2 cores); writes BENCHMARKS-sharded-50k.md.
	GOPF_BENCH_TARGET=$@ KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" $(GO) run ./test/bench/cmd/bench -scenario sharded -sharded-n 50000 -sharded-runs r1,r2,r4 -phase-timeout 40m -markdown BENCHMARKS-sharded-50k.md -json bin/bench/results-sharded-50k.json $(BENCH_FLAGS)

.PHONY: bench-go
bench-go: envtest ## Go benchmarks of the engine's per-reconcile work (ns/op, B/op, allocs/op). Extra flags: BENCH_GO_FLAGS="-count 5".
	KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" $(GO) test -run '^$$' -bench . -benchmem $(BENCH_GO_FLAGS) ./internal/engine/

##@ Dependencies

.PHONY: envtest
envtest: ## Build kube-apiserver and etcd from the Go module proxy into bin/k8s (cached).
	@KUBE_VERSION=$(KUBE_VERSION) ETCD_VERSION=$(ETCD_VERSION) hack/setup-envtest.sh >/dev/null

.PHONY: controller-gen
controller-gen: $(CONTROLLER_GEN) ## Install controller-gen into bin/.
$(CONTROLLER_GEN):
	@mkdir -p $(LOCALBIN)
	GOBIN=$(LOCALBIN) $(GO) install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_TOOLS_VERSION)
	mv $(LOCALBIN)/controller-gen $(CONTROLLER_GEN)

.PHONY: golangci-lint
golangci-lint: $(GOLANGCI_LINT) ## Install golangci-lint into bin/.
$(GOLANGCI_LINT):
	@mkdir -p $(LOCALBIN)
	GOBIN=$(LOCALBIN) $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	mv $(LOCALBIN)/golangci-lint $(GOLANGCI_LINT)

##@ Deployment

# The image docker-build, docker-push, deploy and build-installer work with.
IMG ?= gopf-$(notdir $(OPERATOR)):latest
CONTAINER_TOOL ?= docker
KUBECTL ?= kubectl
# v5.8.3 and later need Go 1.27.
KUSTOMIZE_VERSION ?= v5.8.2
KUSTOMIZE ?= $(LOCALBIN)/kustomize-$(KUSTOMIZE_VERSION)
# config/default with the image set to $(IMG), so that config/ stays as it is.
DEPLOY_OVERLAY = bin/deploy

ifndef ignore-not-found
  ignore-not-found = false
endif

.PHONY: docker-build
docker-build: ## Build the image $(IMG) of the operator $(OPERATOR) (an example: the Dockerfile builds ./examples/<name>).
	$(CONTAINER_TOOL) build --build-arg EXAMPLE=$(notdir $(OPERATOR)) -t $(IMG) .

.PHONY: docker-push
docker-push: ## Push the image $(IMG).
	$(CONTAINER_TOOL) push $(IMG)

.PHONY: install
install: manifests kustomize ## Install the CRDs into the cluster of the current kubeconfig.
	$(KUSTOMIZE) build config/crd | $(KUBECTL) apply -f -

.PHONY: uninstall
uninstall: manifests kustomize ## Remove the CRDs, and every object of them, from the cluster. ignore-not-found=true ignores missing ones.
	$(KUSTOMIZE) build config/crd | $(KUBECTL) delete --ignore-not-found=$(ignore-not-found) -f -

.PHONY: deploy
deploy: manifests deploy-overlay ## Deploy the operator (CRDs, RBAC, Deployment) with the image $(IMG) to the cluster of the current kubeconfig.
	$(KUSTOMIZE) build $(DEPLOY_OVERLAY) | $(KUBECTL) apply -f -

.PHONY: undeploy
undeploy: deploy-overlay ## Remove what deploy applied. ignore-not-found=true ignores missing objects.
	$(KUSTOMIZE) build $(DEPLOY_OVERLAY) | $(KUBECTL) delete --ignore-not-found=$(ignore-not-found) -f -

.PHONY: build-installer
build-installer: manifests generate deploy-overlay ## Write what deploy applies, with the image $(IMG), to dist/install.yaml.
	@mkdir -p dist
	$(KUSTOMIZE) build $(DEPLOY_OVERLAY) > dist/install.yaml

.PHONY: deploy-overlay
deploy-overlay: kustomize
	@rm -rf $(DEPLOY_OVERLAY) && mkdir -p $(DEPLOY_OVERLAY)
	@cd $(DEPLOY_OVERLAY) && $(KUSTOMIZE) create --resources ../../config/default && $(KUSTOMIZE) edit set image controller=$(IMG)

.PHONY: rbac
rbac: ## Write the ClusterRole the handlers of $(OPERATOR) need to config/rbac/gopf_handlers_role.yaml.
	@mkdir -p $(LOCALBIN)
	{ echo '# Generated by `make rbac` ($(OPERATOR) --print-rbac): what the registered handlers need. Do not edit.'; \
	  $(GO) run $(OPERATOR) --print-rbac; } > $(LOCALBIN)/gopf_handlers_role.yaml
	mv $(LOCALBIN)/gopf_handlers_role.yaml config/rbac/gopf_handlers_role.yaml

.PHONY: check-rbac
check-rbac: manifests kustomize ## Check that config/rbac grants all the handlers of $(OPERATOR) need; lists what is missing.
	@mkdir -p $(LOCALBIN)
	$(KUSTOMIZE) build config/rbac > $(LOCALBIN)/rbac.yaml
	$(GO) run $(OPERATOR) --check-rbac=$(LOCALBIN)/rbac.yaml

.PHONY: kustomize
kustomize: $(KUSTOMIZE) ## Install kustomize into bin/.
$(KUSTOMIZE):
	@mkdir -p $(LOCALBIN)
	GOBIN=$(LOCALBIN) $(GO) install sigs.k8s.io/kustomize/kustomize/v5@$(KUSTOMIZE_VERSION)
	mv $(LOCALBIN)/kustomize $(KUSTOMIZE)

##@ kubectl plugin

# Where install-kubectl-plugin puts kubectl-gopf: GOBIN, else GOPATH/bin
# (as go install does); kubectl finds plugins on PATH.
KUBECTL_PLUGIN_DIR ?= $(or $(shell $(GO) env GOBIN),$(shell $(GO) env GOPATH)/bin)

.PHONY: build-kubectl-plugin
build-kubectl-plugin: ## Build the kubectl plugin (kubectl gopf status ...) into bin/kubectl-gopf.
	$(GO) build -o $(LOCALBIN)/kubectl-gopf ./cmd/kubectl-gopf

.PHONY: install-kubectl-plugin
install-kubectl-plugin: ## Install the kubectl plugin into KUBECTL_PLUGIN_DIR (default: where go install puts binaries); same as go install ./cmd/kubectl-gopf.
	@mkdir -p "$(KUBECTL_PLUGIN_DIR)"
	$(GO) build -o "$(KUBECTL_PLUGIN_DIR)/kubectl-gopf" ./cmd/kubectl-gopf
	@echo "installed $(KUBECTL_PLUGIN_DIR)/kubectl-gopf: try kubectl gopf status --help"

##@ kubebuilder plugin

# Where kubebuilder looks for external plugins: $EXTERNAL_PLUGINS_PATH if set,
# else kubebuilder/plugins in the user's configuration folder.
ifeq ($(shell uname -s),Darwin)
KUBEBUILDER_PLUGINS ?= $(or $(EXTERNAL_PLUGINS_PATH),$(or $(XDG_CONFIG_HOME),$(HOME)/Library/Application Support)/kubebuilder/plugins)
else
KUBEBUILDER_PLUGINS ?= $(or $(EXTERNAL_PLUGINS_PATH),$(or $(XDG_CONFIG_HOME),$(HOME)/.config)/kubebuilder/plugins)
endif

.PHONY: install-plugin
install-plugin: ## Install the kubebuilder plugin gopf/v1-alpha (kubebuilder init --plugins go/v4,gopf/v1-alpha); projects it scaffolds depend on this checkout.
	@mkdir -p "$(KUBEBUILDER_PLUGINS)/gopf/v1-alpha"
	$(GO) build -ldflags "-X 'main.checkout=$(CURDIR)'" -o "$(KUBEBUILDER_PLUGINS)/gopf/v1-alpha/gopf" ./cmd/kubebuilder-gopf
	@echo "installed $(KUBEBUILDER_PLUGINS)/gopf/v1-alpha/gopf"
