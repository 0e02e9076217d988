#!/usr/bin/env bash
# deploy/quickstart.sh - run the whole Orrery platform on this machine.
#
# Installs what is missing, builds, starts the private stack (PostgreSQL,
# ZooKeeper, Redis, MariaDB under var/), writes var/orrery.conf with fresh
# secrets on first run, starts every daemon that is built, and prints where to
# go. Run it again at any time: what is running is left alone.
# `./deploy/stack.sh stop` stops the daemons and the stack.
#
#   ORRERY_VAR_DIR    where data, logs and pid files live (default <repo>/var)
#   ORRERY_PORT_BASE  first of the private loopback ports (default 15400)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

say() { printf '== %s\n' "$*"; }

say "installing dependencies"
./deploy/install-deps.sh

say "building"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$(nproc 2>/dev/null || echo 2)"
say "building the UI into static/app"
(cd web && npm run build --silent)

export ORRERY_VAR_DIR="${ORRERY_VAR_DIR:-$ROOT/var}"
export ORRERY_PORT_BASE="${ORRERY_PORT_BASE:-15400}"

say "starting the private stack in $ORRERY_VAR_DIR"
./deploy/stack.sh start
eval "$(./deploy/stack.sh env)"

# shellcheck source=deploy/daemons.sh
. "$ROOT/deploy/daemons.sh"
orr_daemons_start "$ROOT"
orr_daemons_summary "$ROOT"
