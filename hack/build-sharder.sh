#!/usr/bin/env bash
# build-sharder.sh builds the reference sharder (cmd/sharder of
# github.com/timebertt/kubernetes-controller-sharding) from a source folder,
# for `make sharder-check`. Its dependencies come from the Go module proxy.
# It is built as the one module it is (GOWORK=off): the folder's go.work adds
# the example operator's module, whose dependencies the sharder does not need.
#
# Usage: hack/build-sharder.sh SRC [OUT]
#
# OUT defaults to bin/sharder. The last line printed on stdout is the
# binary's path; the build's output goes to stderr.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
GO="${GO:-go}"
SRC="${1:?usage: hack/build-sharder.sh SRC [OUT], SRC a checkout of github.com/timebertt/kubernetes-controller-sharding}"
OUT="${2:-${ROOT}/bin/sharder}"

if [[ ! -f "${SRC}/cmd/sharder/main.go" ]]; then
	echo "build-sharder: ${SRC} has no cmd/sharder/main.go: not a checkout of github.com/timebertt/kubernetes-controller-sharding" >&2
	exit 1
fi
mkdir -p "$(dirname "${OUT}")"
OUT="$(cd "$(dirname "${OUT}")" && pwd)/$(basename "${OUT}")"
echo "build-sharder: building ${SRC}/cmd/sharder into ${OUT}" >&2
(cd "${SRC}" && GOWORK=off GOFLAGS=-mod=mod "${GO}" build -o "${OUT}" ./cmd/sharder) >&2
echo "${OUT}"
