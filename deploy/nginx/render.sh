#!/usr/bin/env bash
# deploy/nginx/render.sh - write a complete nginx.conf for a private nginx
# (no root needed) in front of several galaxyd, from deploy/nginx/orrery.conf.
#
#   render.sh [--tls CERT KEY] PREFIX_DIR LISTEN GALAXY_ADDR...
#
# With --tls, the server block is orrery-tls.conf (HTTPS with CERT and KEY,
# absolute paths) instead of orrery.conf.
#
# PREFIX_DIR gets nginx.conf, logs/, tmp/ and the pid file. Run nginx with:
#   nginx -p PREFIX_DIR -c PREFIX_DIR/nginx.conf
set -euo pipefail
conf=orrery.conf
cert=""
key=""
if [ "${1:-}" = "--tls" ]; then
    if [ $# -lt 3 ]; then
        echo "usage: $0 [--tls CERT KEY] PREFIX_DIR LISTEN GALAXY_ADDR..." >&2
        exit 2
    fi
    conf=orrery-tls.conf
    cert=$2
    key=$3
    shift 3
fi
if [ $# -lt 3 ]; then
    echo "usage: $0 [--tls CERT KEY] PREFIX_DIR LISTEN GALAXY_ADDR..." >&2
    exit 2
fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
prefix=$1
listen=$2
shift 2
mkdir -p "$prefix/logs" "$prefix/tmp"
# Workers drop privileges when nginx starts as root: let them write buffers.
chmod 1777 "$prefix/tmp"
ups=""
for g in "$@"; do
    ups="${ups}server $g max_fails=1 fail_timeout=5s; "
done
server_block=$(sed -e "s|@LISTEN@|$listen|" -e "s|@UPSTREAMS@|$ups|" -e "s|@CERT@|$cert|" \
    -e "s|@KEY@|$key|" "$here/$conf")
cat >"$prefix/nginx.conf" <<CONF
# Rendered by deploy/nginx/render.sh; do not edit.
# One worker per core: a single worker is one runnable task among many on a
# busy machine and becomes the front's bottleneck.
worker_processes auto;
daemon off;
pid $prefix/nginx.pid;
error_log $prefix/logs/error.log warn;
events { worker_connections 1024; }
http {
    access_log $prefix/logs/access.log combined buffer=64k flush=1s;
    client_body_temp_path $prefix/tmp/body;
    proxy_temp_path $prefix/tmp/proxy;
    fastcgi_temp_path $prefix/tmp/fastcgi;
    uwsgi_temp_path $prefix/tmp/uwsgi;
    scgi_temp_path $prefix/tmp/scgi;
$server_block
}
CONF
echo "$prefix/nginx.conf"
