#!/usr/bin/env bash
# deploy/test.sh - Orrery's one test command.
#
# Installs what is missing, builds with warnings as errors, starts a private
# stack (PostgreSQL, ZooKeeper, Redis, MariaDB) for the tests, runs every test
# through ctest once in the normal build and once under AddressSanitizer +
# UndefinedBehaviorSanitizer, stops the stack, and exits non-zero on any
# failure.
#
# The test stack has its own var dir and port base, so it never disturbs a
# platform started by deploy/quickstart.sh in the same checkout:
#   ORRERY_TEST_VAR_DIR   (default <repo>/var/test)
#   ORRERY_TEST_PORT_BASE (default 15600)
#   ORRERY_TEST_SKIP_ASAN=1 runs only the normal build (for quick local runs;
#                           CI always runs both).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

say() { printf '== %s\n' "$*"; }

say "installing dependencies"
./deploy/install-deps.sh

JOBS=$(nproc 2>/dev/null || echo 2)

build() {
    local dir=$1
    shift
    say "building $dir $*"
    cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
    cmake --build "$dir" -j "$JOBS"
}

# The servers run as the unprivileged user "orrery", which must be able to
# enter the var dir: when the checkout lives under a private folder (such as
# /root), the test stack goes under /tmp instead.
default_var="$ROOT/var/test"
dir=$ROOT
while [ "$dir" != "/" ]; do
    if [ "$(($(stat -c '%a' "$dir") % 2))" -eq 0 ]; then
        default_var="/tmp/orrery-test-$(printf '%s' "$ROOT" | md5sum | cut -c1-8)"
        break
    fi
    dir=$(dirname "$dir")
done
export ORRERY_VAR_DIR="${ORRERY_TEST_VAR_DIR:-$default_var}"
export ORRERY_PORT_BASE="${ORRERY_TEST_PORT_BASE:-15600}"
# The test stack holds throw-away data: it runs with the fast settings
# (PostgreSQL fsync off, Redis without an append-only file, ...), chosen here
# and nowhere else; the quickstart's stack is durable (docs/operations.md).
export ORRERY_STACK_DURABLE=0
# The tests need all four servers, whatever ORRERY_STACK a development shell
# has set for its own stack (without MariaDB, every MariaDB test fails).
export ORRERY_STACK="pg zk redis mysql"

cleanup() {
    say "stopping the test stack"
    ./deploy/stack.sh stop || true
}
trap cleanup EXIT

# Build first: a compile error should not wait for the servers.
build build

say "starting the test stack in $ORRERY_VAR_DIR (port base $ORRERY_PORT_BASE)"
./deploy/stack.sh start
eval "$(./deploy/stack.sh env)"

status=0
say "tests: normal build"
rm -f build/Testing/Temporary/LastTestsFailed.log
(cd build && ctest --output-on-failure --timeout 600) || status=1

if [ "${ORRERY_TEST_SKIP_ASAN:-0}" != "1" ]; then
    build build-asan -DORR_SANITIZE=ON
    export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:strict_string_checks=1
    export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
    # The browser's accessibility audits judge the console's markup, not
    # the daemons: the normal build audited both widths, this one audits
    # the desktop width (the same requests reach the sanitized daemons).
    export ORRERY_E2E_A11Y_WIDTHS=desktop
    say "tests: AddressSanitizer + UndefinedBehaviorSanitizer build"
    rm -f build-asan/Testing/Temporary/LastTestsFailed.log
    (cd build-asan && ctest --output-on-failure --timeout 900) || status=1
fi

if [ "$status" -ne 0 ]; then
    # What failed, again, at the end: the tests' own output is far above.
    python3 deploy/test-digest.py build "normal build" || true
    if [ "${ORRERY_TEST_SKIP_ASAN:-0}" != "1" ]; then
        python3 deploy/test-digest.py build-asan "AddressSanitizer build" || true
    fi
    say "FAILED"
else
    say "all tests passed"
fi
exit "$status"
