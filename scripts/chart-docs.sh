#!/usr/bin/env bash
# Regenerates charts/scale-agent/README.md from values.yaml's `# --` comments and README.md.gotmpl with helm-docs
# (built by tools/k8s/build.sh like the other test binaries).
#   scripts/chart-docs.sh           write the README
#   scripts/chart-docs.sh --check   fail when the README differs from what helm-docs renders
set -euo pipefail
cd "$(dirname "$0")/.."
bin="$(bash tools/k8s/build.sh 2>/dev/null | tail -n 1)/helm-docs"
args=(--chart-search-root charts --sort-values-order file --log-level warning)
if [ "${1:-}" = "--check" ]; then
  if ! diff -u charts/scale-agent/README.md <("$bin" "${args[@]}" --dry-run) >&2; then
    echo "chart:docs: charts/scale-agent/README.md is out of date; run 'npm run chart:docs' and commit it" >&2
    exit 1
  fi
  echo "chart:docs: charts/scale-agent/README.md matches values.yaml"
else
  "$bin" "${args[@]}"
  echo "chart:docs: wrote charts/scale-agent/README.md"
fi
