#!/usr/bin/env bash
# make test-alerts (part of make test): deploy/prometheus/alerts.yml checked
# and unit-tested with Prometheus' own rule test format
# (deploy/prometheus/alerts_test.yml), and every alert in it tested.
# Needs promtool: Debian's prometheus package
# (apt-get install -y --no-install-recommends prometheus).
set -euo pipefail
cd "$(dirname "$0")/../deploy/prometheus"
command -v promtool >/dev/null || {
  echo "test-alerts: promtool is missing; install it (apt-get install -y --no-install-recommends prometheus)" >&2
  exit 1
}
promtool check rules alerts.yml
promtool test rules alerts_test.yml
missing=0
for a in $(sed -n 's/^ *- alert: *\([A-Za-z0-9_]*\).*/\1/p' alerts.yml); do
  if ! grep -q "alertname: $a\$" alerts_test.yml; then
    echo "test-alerts: alert $a has no test in deploy/prometheus/alerts_test.yml" >&2
    missing=1
  fi
done
exit $missing
