#!/usr/bin/env bash
# Builds the project's image from the repository's own Dockerfile, here, where no container registry is
# reachable, into an image archive that `ctr -n k8s.io images import` (or `docker load`) loads.
#
# The Dockerfile's base (ARG BASE_IMAGE, default node:24-bookworm-slim) is replaced by an equivalent made here:
# a Debian rootfs from Debian's packages (mmdebstrap), Node from the npm registry's node-linux-<arch> package and
# npm from the registry (versions.env), with the node user (uid 1000) the public image has. The image is then
# built by Debian's buildah (chroot isolation, host network for the Dockerfile's apt-get and npm ci) with that
# base. Both are cached outside the clone under a key of their inputs: the base under versions.env and the code
# that makes it; the image under the base's key, the Dockerfile and the files it COPYs (as git sees them:
# tracked or untracked, not ignored). A warm run with nothing changed takes about a second.
#
# With arguments DOCKERFILE REF it builds that Dockerfile instead, on the same base, tagged REF (the tests'
# MariaDB image, test/infra/real-node/mariadb.Dockerfile): one way to make every image the real node runs.
#
# Needs root (mmdebstrap in root mode, buildah's storage) and Debian's buildah and mmdebstrap, installed when
# missing. Output: progress on stderr; the archive's path and the image reference on the last line of stdout.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
# shellcheck source=/dev/null
. "$here/versions.env"
cache_root="${SCALE_AGENT_IMAGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/scale-agent/image}"
say() { printf '[image] %s\n' "$*" >&2; }
fail() { say "error: $*"; exit 1; }

[ "$(id -u)" -eq 0 ] || fail "building the image needs root (mmdebstrap's root mode and buildah's storage); run it with sudo"
need=()
command -v buildah >/dev/null || need+=(buildah)
command -v mmdebstrap >/dev/null || need+=(mmdebstrap)
if [ ${#need[@]} -gt 0 ]; then
  say "installing ${need[*]} from Debian's packages (one-time)"
  export DEBIAN_FRONTEND=noninteractive
  { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${need[@]}"; } >&2 \
    || fail "apt-get install ${need[*]} failed"
fi
case "$(uname -m)" in
  x86_64) node_arch=x64 ;;
  aarch64) node_arch=arm64 ;;
  *) fail "no node-linux package for $(uname -m)" ;;
esac
mkdir -p "$cache_root"
# scripts/env.sh: Node and npm on PATH, to fetch the base's Node and npm from the registry.
# shellcheck source=/dev/null
. "$root/scripts/env.sh" 2>/dev/null

# buildah's own storage, private to this cache (layers of earlier builds speed up the next one).
bh() { buildah --root "$cache_root/storage" --runroot "$cache_root/run" --storage-driver overlay "$@"; }

# The base: the public node:24-bookworm-slim's equivalent. Its key covers versions.env and this function's text.
make_base() {
  local out="$1" name="$2" work ctr
  work="$(mktemp -d "$cache_root/base-work.XXXXXX")"
  # shellcheck disable=SC2064
  trap "rm -rf '$work'" RETURN
  npm install --silent --no-save --no-package-lock --prefix "$work/node" "node-linux-$node_arch@$NODE_VERSION" >&2
  (cd "$work" && npm pack --silent "npm@$NPM_VERSION" >/dev/null)
  # debian:bookworm-slim's trims (no man pages, docs but copyrights, locales, info), merged /usr without the
  # usrmerge package (which would pull in perl), and the node image's user: node, uid/gid 1000, /home/node.
  mmdebstrap --variant=minbase --mode=root --format=tar --quiet \
    --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-include=/usr/share/locale/locale.alias' \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --customize-hook="install -m 0755 '$work/node/node_modules/node-linux-$node_arch/bin/node' \"\$1/usr/local/bin/node\"" \
    --customize-hook="mkdir -p \"\$1/usr/local/lib/node_modules/npm\" && tar -xzf '$work/npm-$NPM_VERSION.tgz' --no-same-owner --strip-components=1 -C \"\$1/usr/local/lib/node_modules/npm\"" \
    --customize-hook='ln -s ../lib/node_modules/npm/bin/npm-cli.js "$1/usr/local/bin/npm" && ln -s ../lib/node_modules/npm/bin/npx-cli.js "$1/usr/local/bin/npx"' \
    --customize-hook='chroot "$1" groupadd --gid 1000 node && chroot "$1" useradd --uid 1000 --gid node --shell /bin/bash --create-home node' \
    --customize-hook="$(declare -f docker_apt_config); docker_apt_config \"\$1\"" \
    --customize-hook='rm -rf "$1/var/lib/apt/lists/"* "$1/var/cache/apt/"*.bin' \
    "$DEBIAN_SUITE" "$work/rootfs.tar" \
    "deb $DEBIAN_MIRROR $DEBIAN_SUITE main" \
    "deb $DEBIAN_MIRROR $DEBIAN_SUITE-updates main" \
    "deb $DEBIAN_SECURITY_MIRROR $DEBIAN_SUITE-security main" >&2
  ctr="$(bh from --quiet scratch)"
  bh add --quiet "$ctr" "$work/rootfs.tar" / >/dev/null
  bh config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --env "NODE_VERSION=$NODE_VERSION" --cmd node --os linux --arch "$(go_arch)" "$ctr"
  bh commit --quiet --rm "$ctr" "$name" >/dev/null
  bh push --quiet "$name" "docker-archive:$out/base.tar:$name" >&2
}
# What Debian's official images (debuerreotype) configure for apt and dpkg in a container: no package caches or
# downloaded .debs left in a layer after apt-get install, no translations, no recommends kept by autoremove,
# no fsync per file. A Dockerfile's `apt-get install ... && rm -rf /var/lib/apt/lists/*` relies on the first.
docker_apt_config() {
  local r="$1" clean='rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true'
  printf 'DPkg::Post-Invoke { "%s"; };\nAPT::Update::Post-Invoke { "%s"; };\nDir::Cache::pkgcache "";\nDir::Cache::srcpkgcache "";\n' \
    "$clean" "$clean" >"$r/etc/apt/apt.conf.d/docker-clean"
  echo 'Acquire::Languages "none";' >"$r/etc/apt/apt.conf.d/docker-no-languages"
  echo 'Acquire::GzipIndexes "true";' >"$r/etc/apt/apt.conf.d/docker-gzip-indexes"
  echo 'Apt::AutoRemove::SuggestsImportant "false";' >"$r/etc/apt/apt.conf.d/docker-autoremove-suggests"
  echo 'force-unsafe-io' >"$r/etc/dpkg/dpkg.cfg.d/docker-apt-speedup"
}
go_arch() { case "$node_arch" in x64) echo amd64 ;; *) echo arm64 ;; esac; }

base_key="$({ cat "$here/versions.env"; echo "$node_arch"; declare -f make_base docker_apt_config go_arch; } | sha256sum | cut -c1-16)"
base_name="localhost/scale-agent-base:$base_key"
base_dir="$cache_root/base-$base_key"
(
  flock 9
  if [ ! -f "$base_dir/.ok" ]; then
    say "base: Debian $DEBIAN_SUITE + Node $NODE_VERSION + npm $NPM_VERSION (cold, a few minutes: Debian and npm downloads)..."
    start=$(date +%s)
    rm -rf "$base_dir.tmp"; mkdir -p "$base_dir.tmp"
    make_base "$base_dir.tmp" "$base_name"
    touch "$base_dir.tmp/.ok"; rm -rf "$base_dir"; mv "$base_dir.tmp" "$base_dir"
    say "base: built in $(( $(date +%s) - start )) s"
  fi
  # The storage may have been pruned or deleted since: the archive is the base's cache.
  bh inspect --type image "$base_name" >/dev/null 2>&1 || bh pull --quiet "docker-archive:$base_dir/base.tar" >/dev/null
) 9>"$cache_root/.lock-base"

# The build context: the Dockerfile and what its COPY lines take from the repository (COPY --from takes from a
# stage), as git sees the working tree, so neither node_modules nor dist nor anything ignored goes in.
if [ $# -eq 2 ]; then
  dockerfile="$(realpath "$1")" ref="$2"
elif [ $# -eq 0 ]; then
  dockerfile="$root/Dockerfile"
  ref="$IMAGE_REPOSITORY:$(node -p 'require(process.argv[1]).version' "$root/package.json")"
else
  fail "usage: build.sh [DOCKERFILE REF]"
fi
mapfile -t sources < <(awk '$1 == "COPY" && $2 !~ /^--from/ { for (i = 2; i < NF; i++) if ($i !~ /^--/) print $i }' "$dockerfile" | sort -u)
context="$(mktemp -d "$cache_root/context.XXXXXX")"
trap 'rm -rf "$context"' EXIT
cp "$dockerfile" "$context/Dockerfile"
if [ ${#sources[@]} -gt 0 ]; then
  (cd "$root" && git ls-files -z --cached --others --exclude-standard -- "${sources[@]}" \
    | xargs -0 -r -I{} sh -c '[ -e "$1" ] && printf "%s\0" "$1" || true' _ {} \
    | tar --null -T - -cf -) | tar -xf - -C "$context"
fi
# The key: the base and every file's path, mode and content (and the reference it is tagged with).
key="$({ echo "$base_key $ref"; cd "$context" && find . -type f -printf '%m %p\n' | LC_ALL=C sort \
  && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum; } | sha256sum | cut -c1-16)"
out="$cache_root/image-$key"
(
  flock 9
  [ -f "$out/.ok" ] && { say "image: cached in $out"; exit 0; }
  say "image: building $ref from the Dockerfile on base $base_key (several minutes cold: the project's runs npm ci and tsc)..."
  start=$(date +%s)
  rm -rf "$out.tmp"; mkdir -p "$out.tmp"
  # The Dockerfile's npm ci reaches the registry the way this machine's npm and Node do (its registry, and its CA
  # file or NODE_EXTRA_CA_CERTS where a TLS-inspecting proxy needs one). Its RUN steps run as root: root's home,
  # with that .npmrc, is a directory of this cache bind-mounted over /root, which exists in the base, so no mount
  # point and nothing of the config lands in the image (and npm's download cache there outlives the build).
  npm_home="$cache_root/npm-home"
  mkdir -p "$npm_home"
  printf 'registry=%s\nupdate-notifier=false\nfund=false\n' "$(npm config get registry)" >"$npm_home/.npmrc"
  cafile="$(npm config get cafile)"
  [ "$cafile" != null ] || cafile="${NODE_EXTRA_CA_CERTS:-}"
  if [ -n "$cafile" ] && [ -f "$cafile" ]; then
    cp "$cafile" "$npm_home/ca.crt"
    echo 'cafile=/root/ca.crt' >>"$npm_home/.npmrc"
  fi
  bh bud --quiet --isolation chroot --network host --layers --pull=never --volume "$npm_home:/root" \
    --build-arg "BASE_IMAGE=$base_name" --tag "$ref" --file "$context/Dockerfile" "$context" >&2
  bh push --quiet "$ref" "docker-archive:$out.tmp/image.tar:$ref" >&2
  echo "$ref" >"$out.tmp/ref"
  touch "$out.tmp/.ok"; rm -rf "$out"; mv "$out.tmp" "$out"
  # Layers no tag points at any more; the cached ones of the current build stay for the next. Archives of older
  # inputs: the three newest stay (a branch switched back and forth), each is a few hundred MB.
  bh rmi --prune >/dev/null 2>&1 || true
  find "$cache_root" -maxdepth 1 -name 'image-*' -type d ! -name '*.tmp' -printf '%T@ %p\n' | sort -rn | tail -n +4 \
    | cut -d' ' -f2- | xargs -r rm -rf
  say "image: built in $(( $(date +%s) - start )) s, $(du -m "$out/image.tar" | cut -f1) MB archive"
) 9>"$cache_root/.lock-image"
echo "$out/image.tar $ref"
