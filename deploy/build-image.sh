#!/usr/bin/env bash
# Builds the image the Containerfile describes without any registry: the static binary is built
# here and put in a tar root file system that `podman import` turns into an image with the same
# user, entry point and working directory.
#   deploy/build-image.sh [NAME]       (default localhost/tsdescramble:latest)
set -euo pipefail
cd "$(dirname "$0")/.."
name=${1:-localhost/tsdescramble:latest}
podman=${PODMAN:-podman}

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/usr/local/bin" "$root/etc" "$root/tmp" "$root/data"
CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$root/usr/local/bin/tsdescramble" ./cmd/tsdescramble
echo 'tsdescramble:x:65532:65532:tsdescramble:/:/sbin/nologin' >"$root/etc/passwd"
echo 'tsdescramble:x:65532:' >"$root/etc/group"
chmod 1777 "$root/tmp"
# Owned by root, whoever builds; numeric owners, so the image is the same on any machine.
tar --numeric-owner --owner=0 --group=0 --sort=name --mtime=@0 -C "$root" -cf "$root.tar" .
trap 'rm -rf "$root" "$root.tar"' EXIT
$podman import \
	--change 'USER=65532:65532' \
	--change 'WORKDIR=/data' \
	--change 'ENTRYPOINT=["/usr/local/bin/tsdescramble"]' \
	--change 'CMD=["-h"]' \
	"$root.tar" "$name" >/dev/null
echo "$name"
