#!/usr/bin/env bash
# Builds the real Kubernetes test binaries from Go modules into a cache outside the clone and prints the
# directory that holds them. Binaries are grouped (kube: kube-apiserver, kube-controller-manager, kubectl;
# etcd; helm; kustomize); each group is cached under a key made of its versions, go.mod/go.sum, build
# flags and the Go toolchain, so bumping helm does not rebuild Kubernetes. Also built and cached the same way:
# kwok, Toxiproxy, grpcurl, kube-score, helm-docs and promtool (tests of Spinnaker flows, faults, gRPC
# reflection, policy checks, chart docs and alert rules), and the parts of a real node (node: kubelet,
# kube-scheduler, kube-proxy; containerd; cni; coredns; node-images: our image tool, see tools/node-images).
# A cold build of everything takes roughly 30-45 minutes on 2 cores (kube-apiserver alone is most of it); a warm
# run takes ~0 s.
#
# KUBEBUILDER_ASSETS (the envtest convention): a group whose binaries are all there is not built.
#
# Output: progress on stderr; the binaries' directory as the last line on stdout.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=/dev/null
. "$here/versions.env"
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-modcacherw
cache_root="${SCALE_AGENT_K8S_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/scale-agent/k8s}"
mkdir -p "$cache_root/groups"

say() { printf '[k8s:tools] %s\n' "$*" >&2; }
# Go's official tarball installs to /usr/local/go without touching PATH; look there too.
command -v go >/dev/null || { [ -x /usr/local/go/bin/go ] && PATH="/usr/local/go/bin:$PATH"; }
command -v go >/dev/null || { say "error: 'go' is not on PATH; install Go >= 1.26 (the binaries are built from Go modules)"; exit 1; }
gover="$(go env GOVERSION GOOS GOARCH | tr '\n' ' ')"

# Versions baked in with ldflags, as upstream's hack/lib/version.sh does, so `kubectl version` and helm's
# kube-version checks see real versions instead of v0.0.0-master.
k8s_minor="${K8S_VERSION#v1.}"; k8s_minor="${k8s_minor%%.*}"
kube_ld="-s -w"
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  kube_ld="$kube_ld -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$k8s_minor"
  kube_ld="$kube_ld -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
done
# containerd without the storage drivers that need cgo or kernel features the node does not use.
containerd_tags="no_btrfs no_devmapper no_zfs"
helm_ld="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
for p in helm.sh/helm/v3/pkg/chartutil helm.sh/helm/v3/pkg/lint/rules; do
  helm_ld="$helm_ld -X $p.k8sVersionMajor=1 -X $p.k8sVersionMinor=$k8s_minor"
done

group_bins() {
  case "$1" in
    kube) echo "kube-apiserver kube-controller-manager kubectl" ;;
    etcd) echo "etcd" ;;
    helm) echo "helm" ;;
    kustomize) echo "kustomize" ;;
    kwok) echo "kwok" ;;
    toxiproxy) echo "toxiproxy-server toxiproxy-cli" ;;
    grpcurl) echo "grpcurl" ;;
    kube-score) echo "kube-score" ;;
    helm-docs) echo "helm-docs" ;;
    promtool) echo "promtool" ;;
    node) echo "kubelet kube-scheduler kube-proxy" ;;
    containerd) echo "containerd containerd-shim-runc-v2 ctr" ;;
    cni) echo "bridge host-local loopback portmap" ;;
    coredns) echo "coredns" ;;
    node-images) echo "node-images" ;;
  esac
}
# Single-binary tools installed from their own module at a pinned version: "package@version".
tool_pkg() {
  case "$1" in
    kwok) echo "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION" ;;
    grpcurl) echo "github.com/fullstorydev/grpcurl/cmd/grpcurl@$GRPCURL_VERSION" ;;
    kube-score) echo "github.com/zegl/kube-score/cmd/kube-score@$KUBE_SCORE_VERSION" ;;
    helm-docs) echo "github.com/norwoodj/helm-docs/cmd/helm-docs@$HELM_DOCS_VERSION" ;;
  esac
}
group_key() {
  local g="$1"
  {
    echo "$gover"
    case "$g" in
      kube) cat "$here/kube/go.mod" "$here/kube/go.sum"; echo "$kube_ld" ;;
      etcd) cat "$here/etcd/go.mod" "$here/etcd/go.sum" ;;
      promtool) cat "$here/promtool/go.mod" "$here/promtool/go.sum" ;;
      helm) echo "$HELM_VERSION $helm_ld" ;;
      kustomize) echo "$KUSTOMIZE_VERSION" ;;
      toxiproxy) echo "$TOXIPROXY_VERSION" ;;
      node) cat "$here/node/go.mod" "$here/node/go.sum"; echo "$kube_ld" ;;
      containerd) echo "$CONTAINERD_VERSION $containerd_tags" ;;
      cni) echo "$CNI_PLUGINS_VERSION" ;;
      coredns) cat "$here/coredns/go.mod" "$here/coredns/go.sum" "$here/coredns/main.go" ;;
      node-images) cat "$here/../node-images/go.mod" "$here/../node-images/go.sum" "$here/../node-images/"*.go ;;
      *) tool_pkg "$g" ;;
    esac
  } | sha256sum | cut -c1-16
}
build_group() {
  local g="$1" out="$2"
  case "$g" in
    kube)
      (cd "$here/kube" && go build -mod=readonly -trimpath -tags selinux,notest,grpcnotrace -ldflags "$kube_ld" \
        -o "$out/" k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
        k8s.io/kubernetes/cmd/kubectl) ;;
    etcd)
      # -o names the binary: the go command would call it "server" after .../server/v3.
      (cd "$here/etcd" && go build -mod=readonly -trimpath -ldflags "-s -w" -o "$out/etcd" go.etcd.io/etcd/server/v3) ;;
    helm) GOBIN="$out" go install -trimpath -ldflags "$helm_ld" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION" ;;
    kustomize) GOBIN="$out" go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kustomize/kustomize/v5@$KUSTOMIZE_VERSION" ;;
    promtool)
      # Its own module (promtool/go.mod) because one of Prometheus's pinned dependencies must be replaced.
      (cd "$here/promtool" && go build -mod=readonly -trimpath -ldflags "-s -w" -o "$out/promtool" \
        github.com/prometheus/prometheus/cmd/promtool) ;;
    toxiproxy)
      # Upstream's binaries are cmd/server and cmd/cli; the names say which tool they belong to.
      GOBIN="$out/.bin" go install -trimpath -ldflags "-s -w" \
        "github.com/Shopify/toxiproxy/v2/cmd/server@$TOXIPROXY_VERSION" "github.com/Shopify/toxiproxy/v2/cmd/cli@$TOXIPROXY_VERSION"
      mv "$out/.bin/server" "$out/toxiproxy-server"; mv "$out/.bin/cli" "$out/toxiproxy-cli"; rmdir "$out/.bin" ;;
    node)
      # Its own go.mod (same Kubernetes version and replaces as kube/) so adding the node does not change the kube
      # group's key; the shared packages come from Go's build cache.
      (cd "$here/node" && go build -mod=readonly -trimpath -tags selinux,notest,grpcnotrace -ldflags "$kube_ld" \
        -o "$out/" k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kube-proxy) ;;
    containerd)
      GOBIN="$out" go install -trimpath -tags "$containerd_tags" -ldflags "-s -w \
        -X github.com/containerd/containerd/v2/version.Version=$CONTAINERD_VERSION" \
        "github.com/containerd/containerd/v2/cmd/containerd@$CONTAINERD_VERSION" \
        "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2@$CONTAINERD_VERSION" \
        "github.com/containerd/containerd/v2/cmd/ctr@$CONTAINERD_VERSION" ;;
    cni)
      GOBIN="$out" go install -trimpath -ldflags "-s -w" \
        "github.com/containernetworking/plugins/plugins/main/bridge@$CNI_PLUGINS_VERSION" \
        "github.com/containernetworking/plugins/plugins/ipam/host-local@$CNI_PLUGINS_VERSION" \
        "github.com/containernetworking/plugins/plugins/main/loopback@$CNI_PLUGINS_VERSION" \
        "github.com/containernetworking/plugins/plugins/meta/portmap@$CNI_PLUGINS_VERSION" ;;
    coredns) (cd "$here/coredns" && go build -mod=readonly -trimpath -ldflags "-s -w" -o "$out/coredns" .) ;;
    node-images) (cd "$here/../node-images" && go build -mod=readonly -trimpath -ldflags "-s -w" -o "$out/node-images" .) ;;
    *) GOBIN="$out" go install -trimpath -ldflags "-s -w" "$(tool_pkg "$g")" ;;
  esac
}
estimate() {
  case "$1" in
    kube) echo "20-35 min" ;; etcd) echo "2-4 min" ;; helm) echo "3-6 min" ;; promtool) echo "3-8 min" ;; kwok) echo "2-5 min" ;;
    node) echo "5-15 min" ;; containerd) echo "2-4 min" ;; coredns) echo "2-4 min" ;;
    *) echo "1-2 min" ;;
  esac
}

has_all() { local d="$1"; shift; for b in "$@"; do [ -x "$d/$b" ] || return 1; done; }

groups="etcd kube helm kustomize kwok toxiproxy grpcurl kube-score helm-docs promtool node containerd cni coredns node-images"
all_key=""
declare -A group_dir
for g in $groups; do
  bins=$(group_bins "$g")
  # shellcheck disable=SC2086
  if [ -n "${KUBEBUILDER_ASSETS:-}" ] && has_all "$KUBEBUILDER_ASSETS" $bins; then
    say "$g: using KUBEBUILDER_ASSETS=$KUBEBUILDER_ASSETS"
    group_dir[$g]="$KUBEBUILDER_ASSETS"; all_key="$all_key $g=assets:$KUBEBUILDER_ASSETS"; continue
  fi
  key="$(group_key "$g")"; dir="$cache_root/groups/$g-$key"; group_dir[$g]="$dir"; all_key="$all_key $g=$key"
  [ -f "$dir/.ok" ] && { say "$g: cached in $dir"; continue; }
  (
    flock 9
    [ -f "$dir/.ok" ] && exit 0
    rm -rf "$dir.tmp"; mkdir -p "$dir.tmp"
    say "$g: building $(echo $bins) (cold build, about $(estimate "$g") on 2 cores)..."
    start=$(date +%s)
    build_group "$g" "$dir.tmp" 2>&1 | sed "s/^/[k8s:tools] $g: /" >&2 &
    pid=$!
    last=$start
    while kill -0 "$pid" 2>/dev/null; do
      sleep 2
      if [ $(( $(date +%s) - last )) -ge 60 ] && kill -0 "$pid" 2>/dev/null; then
        last=$(date +%s); say "$g: still building, $(( (last - start) / 60 )) min so far"
      fi
    done
    wait "$pid"
    # shellcheck disable=SC2086
    has_all "$dir.tmp" $bins || { say "$g: build did not produce $(echo $bins)"; exit 1; }
    touch "$dir.tmp/.ok"; rm -rf "$dir"; mv "$dir.tmp" "$dir"
    say "$g: built in $(( $(date +%s) - start )) s"
  ) 9>"$cache_root/groups/.lock-$g"
done

# One directory (envtest layout plus helm and kustomize) keyed by all groups, holding links to them.
key="$(echo "$all_key" | sha256sum | cut -c1-16)"; out="$cache_root/$key"
mkdir -p "$out"
for g in $groups; do
  for b in $(group_bins "$g"); do ln -sfn "${group_dir[$g]}/$b" "$out/$b"; done
done
{ echo "# built by tools/k8s/build.sh"; cat "$here/versions.env"; } >"$out/versions.txt"
say "binaries ready in $out"
echo "$out"
