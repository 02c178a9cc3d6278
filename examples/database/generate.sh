#!/usr/bin/env bash
# Regenerates what controller-gen makes from the database example's markers:
# the API's deep-copy methods, the Database CRD and the operator's RBAC role.
# Run it from anywhere, or with `go generate ./examples/database`.
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
gen="${CONTROLLER_GEN:-$root/bin/controller-gen-v0.23.0}"
[[ -x "$gen" ]] || make controller-gen >/dev/null

"$gen" object:headerFile=hack/boilerplate.go.txt paths=./examples/database/api/...

# api/v1/skip.go carries +kubebuilder:skip so that the repository-wide
# `make manifests` leaves this API alone; an overlay that deletes the file
# lets this run see the types.
overlay="$(mktemp)"
trap 'rm -f "$overlay"' EXIT
printf '{"Replace":{"%s":""}}\n' "$root/examples/database/api/v1/skip.go" >"$overlay"
GOFLAGS="-overlay=$overlay" "$gen" crd paths=./examples/database/... output:crd:artifacts:config=examples/database/config/crd/bases

"$gen" rbac:roleName=database-operator paths=./examples/database/... output:rbac:artifacts:config=examples/database/config/rbac
