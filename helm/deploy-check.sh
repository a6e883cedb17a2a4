#!/usr/bin/env bash
# `make deploy-check`: the chart, the compose file and the Dockerfile checked statically.
#   helm lint --strict and helm template for every value set in helm/skiplock/ci/ (defaults, production, minimal),
#   with helm 4 and helm 3 (which must render the same, but for the token key generated in each rendering);
#   each rendering validated by kubernetes-validate --strict against the oldest Kubernetes the chart supports and a
#   current one, its ServiceMonitor and PrometheusRule against the prometheus-operator CRD schemas
#   (helm/crd-check), and scanned by checkov (helm/checkov.yaml says why each skipped check is skipped); checkov on the
#   Dockerfile; docker-compose config -q with secrets set, and its refusal without them.
# The chart's unit tests and the wiring tests (its commands run against real Postgres and Redis) are in
# tests/deploy (pytest).
set -euo pipefail
cd "$(dirname "$0")/.."
tools=${DEPLOY_TOOLS:-.venv/deploy-tools}/bin
chart=helm/skiplock
kube_versions=(1.29.0 1.37.0)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
(cd helm/crd-check && npm ci --no-audit --no-fund --loglevel=error)
# The token key the chart generates (templates/tokens-secret.yaml) is random in every rendering that cannot `lookup`
# the release's Secret (as here): masked before helm 3's rendering is compared with helm 4's.
mask_generated() {
  awk '/^# Source: /{tokens = ($0 ~ /\/tokens-secret\.yaml$/); data = 0}
       tokens && data && /^  [^ ]/{sub(/: .*/, ": (generated)")}
       tokens && /^data:/{data = 1}
       {print}'
}

for values in "$chart"/ci/*-values.yaml; do
  name=$(basename "$values" -values.yaml)
  echo "== $name"
  "$tools/helm" lint --strict --quiet "$chart" -f "$values"
  "$tools/helm" template skiplock "$chart" --namespace queues -f "$values" > "$out/$name.yaml"
  # Helm 3 must lint it and render the very same objects.
  "$tools/helm3" lint --strict --quiet "$chart" -f "$values"
  "$tools/helm3" template skiplock "$chart" --namespace queues -f "$values" | mask_generated \
    | diff -u <(mask_generated < "$out/$name.yaml") -
  for version in "${kube_versions[@]}"; do
    "$tools/kubernetes-validate" --strict --quiet --kubernetes-version "$version" "$out/$name.yaml"
  done
  "$tools/python" -c 'import json, sys, yaml; print(json.dumps([d for d in yaml.safe_load_all(sys.stdin) if d]))' \
    < "$out/$name.yaml" | node helm/crd-check/validate.mjs
  "$tools/checkov" --skip-download --config-file helm/checkov.yaml --framework kubernetes --file "$out/$name.yaml"
done

echo "== Dockerfile"
"$tools/checkov" --skip-download --compact --quiet --framework dockerfile --file Dockerfile

echo "== docker-compose.yml"
env_file="$out/compose.env"
for name in POSTGRES_PASSWORD REDIS_PASSWORD SKIPLOCK_ADMIN_PASSWORD SKIPLOCK_METRICS_TOKEN SKIPLOCK_TOKEN_SECRET; do
  echo "$name=$(openssl rand -hex 24)"
done > "$env_file"
"$tools/docker-compose" --env-file "$env_file" config -q
# and as a Citus cluster (docs/scale-out.md): the coordinator in place of Postgres, two workers, their registration
SKIPLOCK_POSTGRES_IMAGE=citusdata/citus:13.0 "$tools/docker-compose" --env-file "$env_file" --profile citus config -q
if "$tools/docker-compose" --env-file .env.example config -q 2> "$out/refused"; then
  echo "docker-compose.yml accepted .env.example's empty secrets" >&2
  exit 1
fi
grep -q "set it in .env" "$out/refused"
echo "deploy-check: all clean"
