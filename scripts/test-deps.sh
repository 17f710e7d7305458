#!/usr/bin/env bash
# Installs what the integration tests need from Debian's packages when it is missing: MariaDB (the MySQL
# store's test server), openssl (test PKI), HAProxy (the real load balancer in front of plugin-server
# replicas), tmux (tests read `scale-agent status --watch` as a person sees it), jemalloc (the allocator the
# agent's image runs it on, so bench/agent-memory.ts measures it the same way), runc (runs the project's image, and
# the real node's containers, test/infra/real-node: Debian's runc works with containerd 2, its crun does not),
# iptables (the real node's Services) and libfaketime (a plugin-server replica run with its clock skewed, for the
# randomized schedules and replica faults in test/infra/schedules), PostgreSQL (the PostgreSQL store's test server,
# test/infra/postgres.ts).
# MariaDB is skipped when SCALE_AGENT_TEST_MYSQL_URL points at an existing server, PostgreSQL when
# SCALE_AGENT_TEST_POSTGRES_URL does. Idempotent: a machine that has
# them installs nothing.
set -euo pipefail
say() { printf '[test-deps] %s\n' "$*" >&2; }
need=()
if [ -z "${SCALE_AGENT_TEST_MYSQL_URL:-}" ] && ! command -v mariadbd >/dev/null && [ ! -x /usr/sbin/mariadbd ]; then
  need+=(mariadb-server)
fi
# Debian keeps the server's binaries under /usr/lib/postgresql/VERSION/bin, off the PATH.
if [ -z "${SCALE_AGENT_TEST_POSTGRES_URL:-}" ] && ! command -v postgres >/dev/null \
  && ! compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null; then
  need+=(postgresql)
fi
command -v openssl >/dev/null || need+=(openssl)
command -v haproxy >/dev/null || [ -x /usr/sbin/haproxy ] || need+=(haproxy)
command -v tmux >/dev/null || need+=(tmux)
[ -e "/usr/lib/$(uname -m)-linux-gnu/libjemalloc.so.2" ] || need+=(libjemalloc2)
# runc runs the project's image (test/integration/packaging/image.test.ts) and the real node's containers.
command -v runc >/dev/null || [ -x /usr/sbin/runc ] || need+=(runc)
command -v iptables >/dev/null || [ -x /usr/sbin/iptables ] || need+=(iptables)
# LD_PRELOADed into one replica (FAKETIME=+30s); the library alone, without the faketime wrapper script.
[ -e "/usr/lib/$(uname -m)-linux-gnu/faketime/libfaketime.so.1" ] || need+=(libfaketime)
if [ ${#need[@]} -eq 0 ]; then exit 0; fi
if [ "$(id -u)" -ne 0 ]; then
  say "error: missing ${need[*]}; install them with: sudo apt-get install -y ${need[*]}"
  exit 1
fi
say "installing ${need[*]} from Debian's packages (one-time, about a minute)"
export DEBIAN_FRONTEND=noninteractive
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
apt-get update -qq >"$log" 2>&1 || { cat "$log" >&2; say "error: apt-get update failed"; exit 1; }
# policy-rc.d 101 keeps the package from starting its own system service: the tests run their own server.
policy=/usr/sbin/policy-rc.d; created=0
if [ ! -e "$policy" ]; then printf '#!/bin/sh\nexit 101\n' >"$policy"; chmod +x "$policy"; created=1; fi
apt-get install -y -qq --no-install-recommends "${need[@]}" >"$log" 2>&1 \
  || { tail -40 "$log" >&2; say "error: apt-get install ${need[*]} failed"; exit 1; }
[ "$created" = 1 ] && rm -f "$policy"
say "installed ${need[*]}"
