##@ gopf

# GOPF_SETUP_ENVTEST prints the folder holding kube-apiserver and etcd for
# envtest, providing them if needed, in this order: KUBEBUILDER_ASSETS if it
# holds both; a folder under bin/k8s from an earlier run; the envtest release
# that setup-envtest downloads; binaries built from the Go module proxy, for
# machines that cannot reach the release downloads (several minutes once,
# cached in bin/k8s afterwards). SKIP_ENVTEST_DOWNLOAD=true goes straight to
# the build. See hack/setup-envtest.sh.
GOPF_SETUP_ENVTEST = ENVTEST="$(ENVTEST)" ENVTEST_VERSION="$(ENVTEST_VERSION)" ENVTEST_K8S_VERSION="$(ENVTEST_K8S_VERSION)" LOCALBIN="$(LOCALBIN)" bash hack/setup-envtest.sh

.PHONY: envtest-assets
envtest-assets: ## Print the envtest assets folder (for KUBEBUILDER_ASSETS), building kube-apiserver and etcd from the Go module proxy if nothing else provides them.
	@$(GOPF_SETUP_ENVTEST)
