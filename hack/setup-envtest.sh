#!/usr/bin/env bash
# setup-envtest.sh builds the control-plane binaries that envtest needs
# (kube-apiserver and etcd) from the Go module proxy, so that tests run on
# machines that cannot download release archives.
#
# Usage: hack/setup-envtest.sh [DIR]
#
# DIR defaults to bin/k8s/<kube-version>-<os>-<arch>. The binaries are built
# once and reused. If KUBEBUILDER_ASSETS already names a folder holding both
# binaries, nothing is built and that folder is printed.
#
# The last line printed on stdout is the assets folder; progress goes to stderr.
set -euo pipefail

KUBE_VERSION="${KUBE_VERSION:-v1.37.0}"
ETCD_VERSION="${ETCD_VERSION:-v3.6.16}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
GO="${GO:-go}"

log() { printf '[envtest] %s\n' "$*" >&2; }
fail() {
	log "FAILED: $1"
	log "Nothing half-built was kept. Retry with: make envtest  (or hack/setup-envtest.sh)"
	log "The build uses the Go module proxy ($("$GO" env GOPROXY)); check that it is reachable."
	exit 1
}

has_assets() { [[ -x "$1/kube-apiserver" && -x "$1/etcd" ]]; }

if [[ -n "${KUBEBUILDER_ASSETS:-}" ]] && has_assets "${KUBEBUILDER_ASSETS}"; then
	log "using existing KUBEBUILDER_ASSETS=${KUBEBUILDER_ASSETS}"
	echo "${KUBEBUILDER_ASSETS}"
	exit 0
fi

DEST="${1:-${ROOT}/bin/k8s/${KUBE_VERSION#v}-$("$GO" env GOOS)-$("$GO" env GOARCH)}"
mkdir -p "${DEST}"
DEST="$(cd "${DEST}" && pwd)"
if has_assets "${DEST}"; then
	log "reusing ${DEST}"
	echo "${DEST}"
	exit 0
fi

WORK="$(mktemp -d "${TMPDIR:-/tmp}/gopf-envtest.XXXXXX")"
trap 'rm -rf "${WORK}"' EXIT
# The throwaway modules must not pick up a surrounding go.work or GOFLAGS=-mod=vendor.
export GOWORK=off GOFLAGS=-mod=mod

progress() { # progress PID WHAT: print a heartbeat while a build runs
	local pid=$1 what=$2 start=$SECONDS
	while kill -0 "$pid" 2>/dev/null; do
		sleep 15
		kill -0 "$pid" 2>/dev/null && log "  still building ${what} ($((SECONDS - start))s so far)"
	done
}

run_step() { # run_step WHAT LOGFILE CMD...: run a command in the background with a heartbeat
	local what=$1 logf=$2; shift 2
	"$@" >"${logf}" 2>&1 &
	local pid=$!
	progress "$pid" "$what" &
	local ppid=$!
	if ! wait "$pid"; then
		kill "$ppid" 2>/dev/null || true
		tail -n 30 "${logf}" >&2
		fail "building ${what} (full log above, last 30 lines)"
	fi
	kill "$ppid" 2>/dev/null || true
	wait "$ppid" 2>/dev/null || true
}

build_etcd() {
	local dir="${WORK}/etcd"
	mkdir -p "${dir}"
	log "building etcd ${ETCD_VERSION} from the module proxy (about 30 s)"
	(
		cd "${dir}"
		"$GO" mod init gopf.local/etcd >/dev/null 2>&1
		"$GO" get "go.etcd.io/etcd/server/v3@${ETCD_VERSION}"
		"$GO" build -o "${WORK}/out/etcd" go.etcd.io/etcd/server/v3
	) >"${WORK}/etcd.log" 2>&1 || { tail -n 30 "${WORK}/etcd.log" >&2; fail "building etcd"; }
}

build_apiserver() {
	local dir="${WORK}/kube"
	mkdir -p "${dir}"
	log "building kube-apiserver ${KUBE_VERSION} from the module proxy (about 5 minutes on two cores, cached afterwards)"
	local modfile
	modfile="$("$GO" mod download -json "k8s.io/kubernetes@${KUBE_VERSION}" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')"
	[[ -f "${modfile}" ]] || fail "downloading k8s.io/kubernetes@${KUBE_VERSION}"
	local staging_version="v0${KUBE_VERSION#v1}"
	{
		echo "module gopf.local/kube"
		echo
		echo "go $(sed -n 's/^go //p' "${modfile}")"
		echo
		echo "require k8s.io/kubernetes ${KUBE_VERSION}"
		echo
		echo "replace ("
		sed -n 's|^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => ./staging/.*$|\t\1 => \1 '"${staging_version}"'|p' "${modfile}"
		echo ")"
	} >"${dir}/go.mod"
	(cd "${dir}" && "$GO" mod tidy -e >/dev/null 2>&1 || true)
	run_step "kube-apiserver" "${WORK}/kube.log" \
		bash -c "cd '${dir}' && '$GO' get k8s.io/kubernetes/cmd/kube-apiserver@${KUBE_VERSION} && '$GO' build -o '${WORK}/out/kube-apiserver' k8s.io/kubernetes/cmd/kube-apiserver"
}

mkdir -p "${WORK}/out"
has_assets "${DEST}" || {
	[[ -x "${DEST}/etcd" ]] || build_etcd
	[[ -x "${DEST}/kube-apiserver" ]] || build_apiserver
}
for b in etcd kube-apiserver; do
	if [[ -x "${WORK}/out/${b}" ]]; then
		mv "${WORK}/out/${b}" "${DEST}/${b}"
	fi
done
has_assets "${DEST}" || fail "binaries missing in ${DEST} after the build"
log "ready: ${DEST}"
echo "${DEST}"
