# gopf — Kopf-style handlers for Go operators on controller-runtime.
# `make help` lists the targets.

# Tools and binaries land in bin/, built from the Go module proxy.
LOCALBIN ?= $(shell pwd)/bin
CONTROLLER_TOOLS_VERSION ?= v0.23.0
CONTROLLER_GEN ?= $(LOCALBIN)/controller-gen-$(CONTROLLER_TOOLS_VERSION)
KUBE_VERSION ?= v1.37.0
ETCD_VERSION ?= v3.6.16
GO ?= go

# The operator `make run` and `make build` work on.
OPERATOR ?= ./examples/minimal

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
manifests: controller-gen ## Generate CRDs (config/crd/bases) and RBAC (config/rbac) from markers.
	$(CONTROLLER_GEN) rbac:roleName=manager-role crd paths="./..." output:crd:artifacts:config=config/crd/bases

.PHONY: generate
generate: controller-gen ## Generate DeepCopy methods for the API types.
	$(CONTROLLER_GEN) object:headerFile="hack/boilerplate.go.txt" paths="./api/..."

.PHONY: fmt
fmt: ## Run go fmt.
	$(GO) fmt ./...

.PHONY: vet
vet: ## Run go vet.
	$(GO) vet ./...

.PHONY: test
test: manifests generate vet envtest ## Run all tests (unit and envtest integration) with the race detector.
	KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" $(GO) test -race -count=1 -timeout 20m ./...

##@ Build

.PHONY: build
build: manifests generate vet ## Build the operator ($(OPERATOR)) and the dev runner into bin/.
	$(GO) build -o $(LOCALBIN)/$(notdir $(OPERATOR)) $(OPERATOR)
	$(GO) build -o $(LOCALBIN)/gopf-dev ./cmd/gopf-dev

.PHONY: run
run: manifests generate envtest ## Run the operator ($(OPERATOR)) against KUBECONFIG, or a local control plane with the samples.
	@$(GO) build -o $(LOCALBIN)/gopf-dev ./cmd/gopf-dev
	KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" $(LOCALBIN)/gopf-dev --operator $(OPERATOR)

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
