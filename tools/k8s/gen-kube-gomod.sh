#!/usr/bin/env bash
# Regenerates tools/k8s/kube/go.mod for K8S_VERSION in versions.env.
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
cd "$here/kube"
rm -f go.mod go.sum
go mod init scale-agent.invalid/tools/k8s/kube >/dev/null 2>&1
go mod download "k8s.io/kubernetes@$K8S_VERSION"
kmod="$(go env GOMODCACHE)/cache/download/k8s.io/kubernetes/@v/$K8S_VERSION.mod"
for m in $(sed -n 's|^[[:space:]]*\(k8s\.io/[^ ]*\) => \./staging/.*|\1|p' "$kmod"); do
  go mod edit -replace="$m=$m@$stg"
done
go get -tool "k8s.io/kubernetes/cmd/kube-apiserver@$K8S_VERSION" \
  "k8s.io/kubernetes/cmd/kube-controller-manager@$K8S_VERSION" \
  "k8s.io/kubernetes/cmd/kubectl@$K8S_VERSION"
go mod edit -godebug=default=go1.26
go mod edit -go=1.26.0
go mod tidy
cd "$here/etcd"
rm -f go.mod go.sum
go mod init scale-agent.invalid/tools/k8s/etcd >/dev/null 2>&1
go get -tool "go.etcd.io/etcd/server/v3@$ETCD_VERSION"
go mod edit -go=1.26.0
go mod tidy
echo "regenerated kube/go.mod ($K8S_VERSION) and etcd/go.mod ($ETCD_VERSION)"
