#!/usr/bin/env bash
# Install the Debian packages vigil runs (Prometheus, Alertmanager, node_exporter, smartctl) when missing.
# As root it installs them with apt-get; otherwise it prints the exact command to run and fails.
set -euo pipefail
missing=()
for pkg in "$@"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0
if [[ $(id -u) -ne 0 ]]; then
  echo "vigil needs these Debian packages: ${missing[*]}" >&2
  echo "run:  sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
  echo "then run make again." >&2
  exit 1
fi
echo "installing Debian packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "installed: ${missing[*]} (they are not started as services; vigil starts its own on loopback)"
