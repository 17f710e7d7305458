#!/usr/bin/env bash
# Regenerates tools/k8s/{kube,node}/go.mod for K8S_VERSION in versions.env.
# k8s.io/kubernetes requires its staging modules at the fake version v0.0.0 and maps them with
# `replace => ./staging/...`, which a dependent module ignores; so this consumer module replaces every
# staging module with its published twin v0.<minor>.<patch>. The list is read from the go.mod the
# proxy serves, never kept by hand. Run by a developer when bumping versions; CI never runs it.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=/dev/null
. "$here/versions.env"
export GOTOOLCHAIN=local GOFLAGS=-modcacherw
stg="v0.${K8S_VERSION#v1.}"
# One consumer module per group: kube/ (control plane and kubectl) and node/ (kubelet, scheduler, kube-proxy), so
# adding node binaries never changes the kube group's cache key.
gen_k8s() {
  local dir="$1"; shift
  cd "$here/$dir"
  rm -f go.mod go.sum
  go mod init "scale-agent.invalid/tools/k8s/$dir" >/dev/null 2>&1
  go mod download "k8s.io/kubernetes@$K8S_VERSION"
  kmod="$(go env GOMODCACHE)/cache/download/k8s.io/kubernetes/@v/$K8S_VERSION.mod"
  for m in $(sed -n 's|^[[:space:]]*\(k8s\.io/[^ ]*\) => \./staging/.*|\1|p' "$kmod"); do
    go mod edit -replace="$m=$m@$stg"
  done
  local tools=()
  for t in "$@"; do tools+=("k8s.io/kubernetes/cmd/$t@$K8S_VERSION"); done
  go get -tool "${tools[@]}"
  go mod edit -godebug=default=go1.26
  go mod edit -go=1.26.0
  go mod tidy
}
gen_k8s kube kube-apiserver kube-controller-manager kubectl
gen_k8s node kubelet kube-scheduler kube-proxy
cd "$here/etcd"
rm -f go.mod go.sum
go mod init scale-agent.invalid/tools/k8s/etcd >/dev/null 2>&1
go get -tool "go.etcd.io/etcd/server/v3@$ETCD_VERSION"
go mod edit -go=1.26.0
go mod tidy
echo "regenerated kube/go.mod and node/go.mod ($K8S_VERSION) and etcd/go.mod ($ETCD_VERSION)"
