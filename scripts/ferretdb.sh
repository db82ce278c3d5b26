#!/usr/bin/env bash
# Local MongoDB-wire server for tests: FerretDB v1.24.2 (SQLite handler),
# embedded in tools/ferretdb and built with the local Go toolchain from the
# Go module proxy (see tools/ferretdb/main.go for why not `go install`).
#
# Usage:
#   scripts/ferretdb.sh install          build $ERPLINK_TOOLS_DIR/erplink-ferretdb if stale
#   scripts/ferretdb.sh start [port]     start on 127.0.0.1 (free port if omitted); prints the URL
#   scripts/ferretdb.sh stop [port]      stop one instance (or all started ones) and remove its data
#   scripts/ferretdb.sh run -- CMD...    start, run CMD with MONGODB_URL=<url>erplink_test, stop
#
# Env: ERPLINK_TOOLS_DIR (default: <repo>/.tmp/bin) holds the binary and
# ferretdb.<port>.pid / .dir / .log state files.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SRC_DIR="$REPO/tools/ferretdb"
TOOLS_DIR="${ERPLINK_TOOLS_DIR:-$REPO/.tmp/bin}"
BIN="$TOOLS_DIR/erplink-ferretdb"
READY_TIMEOUT=30

die() { echo "ferretdb.sh: $*" >&2; exit 1; }
log() { echo "ferretdb.sh: $*" >&2; }

cmd_install() {
  local stale=0
  if [[ ! -x "$BIN" ]]; then
    stale=1
  elif [[ -n "$(find "$SRC_DIR" -maxdepth 1 -type f \( -name '*.go' -o -name go.mod -o -name go.sum \) -newer "$BIN" -print -quit)" ]]; then
    stale=1
  fi
  (( stale )) || return 0

  command -v go >/dev/null 2>&1 \
    || die "'go' not found in PATH; install Go >= 1.24 (https://go.dev/dl/) to build tools/ferretdb"
  mkdir -p "$TOOLS_DIR"
  log "building $BIN ..."
  (cd "$SRC_DIR" && GOFLAGS=-mod=mod go build -trimpath -buildvcs=false -o "$BIN.tmp.$$" .) \
    || { rm -f "$BIN.tmp.$$"; die "go build failed in $SRC_DIR"; }
  mv -f "$BIN.tmp.$$" "$BIN"
}

free_port() {
  if command -v python3 >/dev/null 2>&1; then
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
  elif command -v node >/dev/null 2>&1; then
    node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
  else
    die "need python3 or node to pick a free port (or pass a port)"
  fi
}

cmd_start() {
  local port="${1:-}"
  cmd_install
  [[ -n "$port" ]] || port="$(free_port)"
  [[ "$port" =~ ^[0-9]+$ ]] || die "invalid port: $port"

  local state="$TOOLS_DIR/ferretdb.$port"
  if [[ -f "$state.pid" ]] && alive "$(cat "$state.pid")"; then
    die "an instance is already running on port $port (pid $(cat "$state.pid"))"
  fi

  local dir out pid
  dir="$(mktemp -d "${TMPDIR:-/tmp}/erplink-ferretdb.XXXXXX")"
  out="$state.out"
  : >"$out"
  # background start; stdout -> $out (watched for the ready line), stderr -> $state.log
  "$BIN" -listen-addr "127.0.0.1:$port" -sqlite-dir "$dir" >"$out" 2>"$state.log" </dev/null &
  pid=$!
  echo "$pid" >"$state.pid"
  echo "$dir" >"$state.dir"

  local deadline=$(( SECONDS + READY_TIMEOUT ))
  until grep -q '^ready ' "$out" 2>/dev/null; do
    if ! alive "$pid"; then
      cat "$state.log" >&2 || true
      stop_port "$port"
      die "server exited before becoming ready (port $port)"
    fi
    if (( SECONDS >= deadline )); then
      cat "$state.log" >&2 || true
      stop_port "$port"
      die "server not ready after ${READY_TIMEOUT}s (port $port)"
    fi
    sleep 0.1
  done
  echo "mongodb://127.0.0.1:$port/"
}

# alive PID: running and not a zombie (an orphaned server is reparented to
# PID 1, which may reap it late; a zombie still passes `kill -0`).
alive() {
  kill -0 "$1" 2>/dev/null || return 1
  local st
  st="$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null || true)"
  [[ "$st" != Z && "$st" != X ]]
}

stop_port() {
  local port="$1" state="$TOOLS_DIR/ferretdb.$1" pid dir i
  if [[ -f "$state.pid" ]]; then
    pid="$(cat "$state.pid")"
    # only signal it if it is still our binary (guards against pid reuse)
    if alive "$pid" && [[ "$(readlink "/proc/$pid/exe" 2>/dev/null || echo "$BIN")" == "$BIN"* ]]; then
      kill -TERM "$pid" 2>/dev/null || true
      # FerretDB gives connected clients a 3 s grace period before closing them
      for i in $(seq 1 200); do alive "$pid" || break; sleep 0.05; done
      if alive "$pid"; then
        log "pid $pid did not exit 10s after SIGTERM; sending SIGKILL"
        kill -KILL "$pid" 2>/dev/null || true
      fi
    fi
  fi
  if [[ -f "$state.dir" ]]; then
    dir="$(cat "$state.dir")"
    [[ "$dir" == */erplink-ferretdb.* && -d "$dir" ]] && rm -rf -- "$dir"
  fi
  rm -f "$state.pid" "$state.dir" "$state.out" "$state.log"
}

cmd_stop() {
  local port="${1:-}" f
  if [[ -n "$port" ]]; then
    stop_port "$port"
    return
  fi
  shopt -s nullglob
  for f in "$TOOLS_DIR"/ferretdb.*.pid; do
    f="${f##*/ferretdb.}"
    stop_port "${f%.pid}"
  done
}

cmd_run() {
  [[ "${1:-}" == "--" ]] && shift
  (( $# > 0 )) || die "usage: $0 run -- CMD [ARGS...]"
  local url port status=0
  url="$(cmd_start)"
  port="${url##*:}"; port="${port%/}"
  trap 'stop_port "$port"' EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  MONGODB_URL="${url}erplink_test" "$@" || status=$?
  exit "$status"
}

case "${1:-}" in
  install) shift; cmd_install "$@" ;;
  start)   shift; cmd_start "$@" ;;
  stop)    shift; cmd_stop "$@" ;;
  run)     shift; cmd_run "$@" ;;
  *) echo "usage: $0 {install|start [port]|stop [port]|run -- CMD...}" >&2; exit 2 ;;
esac
