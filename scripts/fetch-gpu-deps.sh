#!/usr/bin/env bash
# Fetch the Debian packages the GPU machine needs to build and run ppbench.
# That machine has no network and no SQLite / libyaml / libcurl / cmocka
# headers; tests/gpu/run.sh unpacks "$root"/.deps/*.deb there (dpkg -x into
# /tmp/deps) and points pkg-config, CMake and the loader at them. So the .debs
# go straight into the git-ignored .deps/, where run.sh looks.
#
# On Ubuntu 24.04, Debian's libcurl also needs libunistring2 and libidn2-0:
# without them every ppbench step there exits 127 (the loader cannot start it).
#
# Idempotent: a package whose .deb is already there is skipped. Needs this
# machine's apt lists (apt-get update) and the GPU machine's architecture
# (amd64: run.sh uses /usr/lib/x86_64-linux-gnu).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
dest=$root/.deps
packages=(
  libcmocka0 libcmocka-dev
  libcurl4 libcurl4-openssl-dev libldap-2.5-0 librtmp1 libssh2-1
  libsqlite3-0 libsqlite3-dev sqlite3
  libyaml-0-2 libyaml-dev
  pkgconf pkgconf-bin libpkgconf3
  libnghttp2-14 libpsl5 libbrotli1 libsasl2-2 libsasl2-modules-db
  libunistring2 libidn2-0
)

arch=$(dpkg --print-architecture)
if [ "$arch" != amd64 ]; then
  echo "fetch-gpu-deps: this machine is $arch; the GPU machine needs amd64 packages" >&2
  exit 1
fi

mkdir -p "$dest"
# Download into a scratch folder and move complete files in, so that an
# interrupted download never leaves a .deb that a later run would skip.
partial=$(mktemp -d "$dest/.partial.XXXXXX")
trap 'rm -rf "$partial"' EXIT

# As root, apt would download as its _apt user, who cannot write here (it warns and goes on as root).
apt_opts=(-q)
[ "$(id -u)" -ne 0 ] || apt_opts+=(-o APT::Sandbox::User=root)

fetched=0
for p in "${packages[@]}"; do
  if compgen -G "$dest/${p}_*.deb" >/dev/null; then
    continue
  fi
  if ! (cd "$partial" && apt-get download "${apt_opts[@]}" "$p"); then
    echo "fetch-gpu-deps: apt-get download $p failed (apt lists stale? try apt-get update)" >&2
    exit 1
  fi
  mv "$partial"/"${p}"_*.deb "$dest"/
  fetched=$((fetched + 1))
done
echo "fetch-gpu-deps: $fetched fetched, $((${#packages[@]} - fetched)) already in $dest"
