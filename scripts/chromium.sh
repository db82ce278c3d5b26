#!/usr/bin/env bash
# The browser for the dashboard's tests (test/dashboard): Debian's Chromium,
# installed with apt when missing (like scripts/ferretdb.sh builds FerretDB).
# `--no-install-recommends` keeps it to about 26 packages (with recommends
# apt pulls 131, systemd included).
#
# Usage: scripts/chromium.sh   prints the executable's path (ERPLINK_CHROMIUM, default /usr/bin/chromium)
set -euo pipefail

BIN="${ERPLINK_CHROMIUM:-/usr/bin/chromium}"

die() { echo "chromium.sh: $*" >&2; exit 1; }

if [[ ! -x "$BIN" ]]; then
  [[ "$BIN" == /usr/bin/chromium ]] || die "ERPLINK_CHROMIUM=$BIN is not an executable"
  command -v apt-get >/dev/null 2>&1 || die "no $BIN and no apt-get to install it; install Chromium and set ERPLINK_CHROMIUM"
  sudo=""
  if [[ "$(id -u)" != 0 ]]; then
    command -v sudo >/dev/null 2>&1 || die "installing Chromium needs root (or sudo)"
    sudo="sudo"
  fi
  echo "chromium.sh: installing Debian's chromium ..." >&2
  $sudo apt-get update -qq >&2 || die "apt-get update failed"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends chromium >&2 \
    || die "apt-get install chromium failed"
  [[ -x "$BIN" ]] || die "chromium was installed but $BIN is missing"
fi
echo "$BIN"
