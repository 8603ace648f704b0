#!/usr/bin/env bash
# Installs the Debian packages tristore builds with, if any is missing (Debian 12, as root).
set -euo pipefail
packages=(cmake g++ make pkg-config libpmem-dev libnuma-dev libgtest-dev libgmock-dev
          libbenchmark-dev libfmt-dev libcli11-dev nlohmann-json3-dev python3 python3-matplotlib
          valgrind)
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$package")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  if [[ $(id -u) -ne 0 ]]; then
    echo "error: missing packages (${missing[*]}) and not root; install them with apt-get" >&2
    exit 1
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
