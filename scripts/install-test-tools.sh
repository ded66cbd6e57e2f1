#!/usr/bin/env bash
# Debian tools some tests and benches drive as real processes (issue 9, issue 14, issue 15):
# - qemu-user: tests/test_embedded_cpu.py runs the embedded server under an emulated x86-64-v3 CPU;
# - chromium: tests/api/test_docs.py renders the API docs page headless and checks it is not blank;
# - wrk: bench/api_throughput.py's load generator (a Python client would be the bottleneck, and the
#   ratio against a bare handler would measure the client, not the server).
# Installed only when missing; needs root (apt), as CI has.
set -euo pipefail
missing=()
command -v qemu-x86_64 >/dev/null 2>&1 || missing+=(qemu-user)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v wrk >/dev/null 2>&1 || missing+=(wrk)
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "install-test-tools: need root (apt) to install ${missing[*]}" >&2
    exit 1
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
