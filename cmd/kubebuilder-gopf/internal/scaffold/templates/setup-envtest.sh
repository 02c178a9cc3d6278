#!/usr/bin/env bash
# setup-envtest.sh provides the control plane envtest runs (kube-apiserver
# and etcd) and prints the folder that holds it, for KUBEBUILDER_ASSETS.
# Written by the gopf/v1-alpha kubebuilder plugin; the Makefile runs it (see
# GOPF_SETUP_ENVTEST there).
#
# It takes the first of:
#   1. KUBEBUILDER_ASSETS, when that folder holds both binaries;
#   2. a folder under $LOCALBIN/k8s for this Kubernetes minor version;
#   3. the envtest release setup-envtest downloads (skipped with
#      SKIP_ENVTEST_DOWNLOAD=true);
#   4. binaries built from the Go module proxy: etcd from go.etcd.io/etcd,
#      kube-apiserver from k8s.io/kubernetes (about 5 minutes on two cores,
#      once; the Go build cache keeps the work). This is what makes tests
#      run on machines that reach the module proxy but not the downloads.
#
# Environment: ENVTEST (setup-envtest's path), ENVTEST_VERSION (its version),
# ENVTEST_K8S_VERSION (e.g. 1.37), LOCALBIN (default: bin), KUBE_VERSION and
# ETCD_VERSION (to build other versions), GO (default: go).
#
# The last line on stdout is the folder; progress goes to stderr.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
GO="${GO:-go}"
LOCALBIN="${LOCALBIN:-$(pwd)/bin}"
ETCD_VERSION="${ETCD_VERSION:-v3.6.16}"
GOOS="$("${GO}" env GOOS)"
GOARCH="$("${GO}" env GOARCH)"

say() { printf '[envtest] %s\n' "$*" >&2; }
has_binaries() { [[ -n "$1" && -x "$1/kube-apiserver" && -x "$1/etcd" ]]; }

# 1. An explicit choice wins.
if has_binaries "${KUBEBUILDER_ASSETS:-}"; then
	echo "${KUBEBUILDER_ASSETS}"
	exit 0
fi

# The Kubernetes version: KUBE_VERSION, else the patch release matching the
# k8s.io/api module the project uses (v0.37.2 -> v1.37.2).
if [[ -z "${KUBE_VERSION:-}" ]]; then
	api="$("${GO}" list -m -f '{{if .Replace}}{{.Replace.Version}}{{else}}{{.Version}}{{end}}' k8s.io/api 2>/dev/null || true)"
	if [[ "${api}" =~ ^v0\.([0-9]+)\.([0-9]+)$ ]]; then
		KUBE_VERSION="v1.${BASH_REMATCH[1]}.${BASH_REMATCH[2]}"
	elif [[ "${ENVTEST_K8S_VERSION:-}" =~ ^([0-9]+)\.([0-9]+)$ ]]; then
		KUBE_VERSION="v${ENVTEST_K8S_VERSION}.0"
	else
		say "cannot tell the Kubernetes version: set KUBE_VERSION (e.g. v1.37.0) or ENVTEST_K8S_VERSION (e.g. 1.37)"
		exit 1
	fi
fi
MINOR="$(echo "${KUBE_VERSION#v}" | cut -d. -f1,2)"
ENVTEST_K8S_VERSION="${ENVTEST_K8S_VERSION:-${MINOR}}"

# 2. What an earlier run left: a download or a build of this minor version.
for dir in "${LOCALBIN}/k8s/${KUBE_VERSION#v}-${GOOS}-${GOARCH}" "${LOCALBIN}"/k8s/"${MINOR}".*-"${GOOS}"-"${GOARCH}"; do
	if has_binaries "${dir}"; then
		echo "${dir}"
		exit 0
	fi
done

# 3. The usual download.
if [[ "${SKIP_ENVTEST_DOWNLOAD:-false}" != "true" ]]; then
	ENVTEST="${ENVTEST:-${LOCALBIN}/setup-envtest}"
	if [[ ! -x "${ENVTEST}" && -n "${ENVTEST_VERSION:-}" ]]; then
		mkdir -p "${LOCALBIN}"
		if GOBIN="${LOCALBIN}" "${GO}" install "sigs.k8s.io/controller-runtime/tools/setup-envtest@${ENVTEST_VERSION}" >/dev/null 2>&1; then
			ENVTEST="${LOCALBIN}/setup-envtest"
		else
			say "could not install setup-envtest ${ENVTEST_VERSION}; skipping the envtest download"
		fi
	fi
	if [[ -x "${ENVTEST}" ]]; then
		if dir="$("${ENVTEST}" use "${ENVTEST_K8S_VERSION}" --bin-dir "${LOCALBIN}" -p path 2>/dev/null)" && has_binaries "${dir}"; then
			echo "${dir}"
			exit 0
		fi
		say "the envtest download for Kubernetes ${ENVTEST_K8S_VERSION} is out of reach; building it from the Go module proxy instead"
	fi
fi

# 4. A build from the Go module proxy.
DEST="${LOCALBIN}/k8s/${KUBE_VERSION#v}-${GOOS}-${GOARCH}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/envtest-build.XXXXXX")"
trap 'rm -rf "${WORK}"' EXIT
# The throwaway modules below must not see this project's go.work or flags.
export GOWORK=off GOFLAGS=-mod=mod

build() { # build NAME LOG COMMAND...: run a build, printing a line every 30 s
	local name=$1 log=$2 started=$SECONDS next=30
	shift 2
	"$@" >"${log}" 2>&1 &
	local pid=$!
	while kill -0 "${pid}" 2>/dev/null; do
		sleep 1
		if ((SECONDS - started >= next)); then
			say "  still building ${name} ($((SECONDS - started)) s)"
			next=$((next + 30))
		fi
	done
	if ! wait "${pid}"; then
		tail -n 40 "${log}" >&2
		say "building ${name} failed (the last lines of its log are above). Is the Go module proxy ($("${GO}" env GOPROXY)) reachable?"
		exit 1
	fi
}

mkdir -p "${WORK}/etcd" "${WORK}/kube" "${WORK}/out"
if [[ ! -x "${DEST}/etcd" ]]; then
	say "building etcd ${ETCD_VERSION} from the Go module proxy (about 30 s)"
	build etcd "${WORK}/etcd.log" bash -c "
		cd '${WORK}/etcd' &&
		'${GO}' mod init envtest.local/etcd &&
		'${GO}' get 'go.etcd.io/etcd/server/v3@${ETCD_VERSION}' &&
		'${GO}' build -o '${WORK}/out/etcd' go.etcd.io/etcd/server/v3"
fi
if [[ ! -x "${DEST}/kube-apiserver" ]]; then
	say "building kube-apiserver ${KUBE_VERSION} from the Go module proxy (about 5 minutes on two cores, once)"
	# k8s.io/kubernetes points its k8s.io/* dependencies at its own staging
	# folder; outside its repository they come from the module proxy, at the
	# matching v0.x version.
	gomod="$("${GO}" mod download -json "k8s.io/kubernetes@${KUBE_VERSION}" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')"
	if [[ ! -f "${gomod}" ]]; then
		say "could not download k8s.io/kubernetes@${KUBE_VERSION} from the Go module proxy"
		exit 1
	fi
	staging="v0.${KUBE_VERSION#v1.}"
	{
		echo "module envtest.local/kube"
		echo
		echo "go $(sed -n 's/^go //p' "${gomod}")"
		echo
		echo "require k8s.io/kubernetes ${KUBE_VERSION}"
		echo
		echo "replace ("
		sed -n 's|^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => ./staging/.*$|\t\1 => \1 '"${staging}"'|p' "${gomod}"
		echo ")"
	} >"${WORK}/kube/go.mod"
	build kube-apiserver "${WORK}/kube.log" bash -c "
		cd '${WORK}/kube' &&
		'${GO}' get 'k8s.io/kubernetes/cmd/kube-apiserver@${KUBE_VERSION}' &&
		'${GO}' build -o '${WORK}/out/kube-apiserver' k8s.io/kubernetes/cmd/kube-apiserver"
fi
mkdir -p "${DEST}"
for b in etcd kube-apiserver; do
	if [[ -x "${WORK}/out/${b}" ]]; then
		mv "${WORK}/out/${b}" "${DEST}/${b}"
	fi
done
if ! has_binaries "${DEST}"; then
	say "the binaries are missing from ${DEST} after the build"
	exit 1
fi
say "ready: ${DEST}"
echo "${DEST}"
