#!/usr/bin/env bash
# Installs what Orrery needs on Debian 12: build tools, the -dev libraries,
# the servers the stack launcher runs (deploy/stack.sh) and the test tools;
# then the browser UI's npm packages when web/ exists.
#
#   deploy/install-deps.sh
#
# Idempotent and cheap: it asks dpkg what is installed, and only when
# something is missing does it run `apt-get update` (once) and install just
# the missing packages. With everything in place it makes no network call.
# Installing needs root, or sudo.
set -euo pipefail

ROOT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)
readonly ROOT_DIR

readonly BUILD_TOOLS=(build-essential cmake pkg-config clang clang-format git)
readonly DEV_LIBS=(libpq-dev libzookeeper-mt-dev libhiredis-dev libmariadb-dev liblzo2-dev
	libgrpc-dev protobuf-c-compiler libprotobuf-c-dev libjansson-dev libjwt-dev libsodium-dev
	libsnappy-dev liblz4-dev libcurl4-openssl-dev librdkafka-dev libmicrohttpd-dev libcmocka-dev zlib1g-dev
	libarchive-dev libpcre2-dev libyaml-dev libsystemd-dev)
readonly SERVERS_AND_TOOLS=(postgresql zookeeper default-jre-headless redis-server
	mariadb-server mariadb-client postgresql-client nginx chromium lzop gzip time wrk pgloader
	procps iproute2 iptables curl util-linux tzdata python3 python3-grpcio python3-protobuf
	protobuf-compiler prometheus nodejs npm python3-aiosmtpd systemd dpkg-dev python3-yaml)

say() { printf 'install-deps: %s\n' "$*" >&2; }
die() {
	say "error: $*"
	exit 1
}

# missing_packages: prints the wanted packages dpkg does not list as installed.
missing_packages() {
	local wanted=("${BUILD_TOOLS[@]}" "${DEV_LIBS[@]}" "${SERVERS_AND_TOOLS[@]}")
	local -A installed=()
	local name status p
	# Node.js may come from outside Debian's packages: the commands suffice.
	if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then
		installed[nodejs]=1
		installed[npm]=1
	fi
	# One dpkg-query for all; unknown packages only print to stderr.
	while IFS=' ' read -r name status; do
		[[ $status == "install ok installed" ]] && installed[$name]=1
	done < <(dpkg-query -W -f='${Package} ${Status}\n' "${wanted[@]}" 2>/dev/null || true)
	for p in "${wanted[@]}"; do
		[[ -n ${installed[$p]-} ]] || printf '%s\n' "$p"
	done
}

# as_root CMD...: runs CMD as root (directly, or through sudo).
as_root() {
	if ((EUID == 0)); then
		"$@"
	elif command -v sudo >/dev/null 2>&1; then
		sudo "$@"
	else
		die "installing packages needs root: run this script as root, or install sudo"
	fi
}

install_packages() {
	local missing=()
	mapfile -t missing < <(missing_packages)
	if ((${#missing[@]} == 0)); then
		say "all Debian packages are installed"
		return 0
	fi
	command -v apt-get >/dev/null 2>&1 || die "apt-get not found: this script is for Debian 12"
	say "missing: ${missing[*]}"
	as_root apt-get update
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
		"${missing[@]}"
	mapfile -t missing < <(missing_packages)
	((${#missing[@]} == 0)) || die "still missing after apt-get install: ${missing[*]}"
	say "installed"
}

# The browser UI's packages, when the UI exists; skipped while node_modules
# is newer than the lock file.
install_web() {
	local web=$ROOT_DIR/web
	[[ -f $web/package.json ]] || return 0
	[[ -f $web/package-lock.json ]] ||
		die "web/package-lock.json is missing: run 'npm install' in web/ and commit the lock file"
	if [[ -d $web/node_modules && $web/node_modules -nt $web/package-lock.json ]]; then
		say "web/node_modules is up to date"
		return 0
	fi
	command -v npm >/dev/null 2>&1 || die "npm not found (Debian package npm)"
	say "npm ci in web/"
	(cd -- "$web" && npm ci --no-audit --no-fund)
	# Mark the install as newer than the lock (npm ci makes no folder when
	# there is nothing to install).
	mkdir -p -- "$web/node_modules"
	touch -- "$web/node_modules"
}

install_packages
install_web
