#!/usr/bin/env bash
# Builds the image the Containerfile describes without any registry: the static binary is built
# here and put in a tar root file system that `podman import` turns into an image with the same
# user, entry point and working directory.
#   deploy/build-image.sh [NAME]        (default localhost/tsdescramble:latest)
#   SRT=1 deploy/build-image.sh [NAME]  the same with SRT (-tags srt), as the Containerfile's
#                                       --build-arg SRT=1 builds it (default localhost/tsdescramble:srt);
#                                       needs libsrt-openssl-dev, pkg-config and g++
set -euo pipefail
cd "$(dirname "$0")/.."
srt=${SRT:-0}
name=${1:-localhost/tsdescramble:latest}
if [ "$srt" = 1 ]; then name=${1:-localhost/tsdescramble:srt}; fi
podman=${PODMAN:-podman}

root=$(mktemp -d)
trap 'rm -rf "$root" "$root.log"' EXIT
mkdir -p "$root/usr/local/bin" "$root/etc" "$root/tmp" "$root/data"
if [ "$srt" = 1 ]; then
	# Still one static file on an empty base: libsrt (Debian's OpenSSL flavour), OpenSSL's
	# libcrypto and libstdc++ linked in (their static libraries come with libsrt-openssl-dev,
	# libssl-dev and g++). netgo and osusergo keep Go's own resolver and user lookup, which
	# need none of glibc's NSS modules, which a static binary cannot load. The linker warns
	# that glibc's dlopen, getaddrinfo and gethostbyname would need them: libsrt calls
	# getaddrinfo only for the wildcard address of a caller's socket, which needs no lookup,
	# and the others are OpenSSL's, which SRT's encryption does not call; deploy/podman-test.sh
	# runs a caller and a listener, encrypted, in the image. The warnings show if the build fails.
	if ! CGO_ENABLED=1 CGO_LDFLAGS="-lstdc++ -lcrypto -lm -ldl -lpthread" go build -tags srt,netgo,osusergo -trimpath \
		-ldflags='-s -w -linkmode external -extldflags "-static"' -o "$root/usr/local/bin/tsdescramble" ./cmd/tsdescramble \
		>"$root.log" 2>&1; then
		cat "$root.log" >&2
		exit 1
	fi
else
	CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$root/usr/local/bin/tsdescramble" ./cmd/tsdescramble
fi
echo 'tsdescramble:x:65532:65532:tsdescramble:/:/sbin/nologin' >"$root/etc/passwd"
echo 'tsdescramble:x:65532:' >"$root/etc/group"
chmod 1777 "$root/tmp"
# Owned by root, whoever builds; numeric owners, so the image is the same on any machine.
tar --numeric-owner --owner=0 --group=0 --sort=name --mtime=@0 -C "$root" -cf "$root.tar" .
trap 'rm -rf "$root" "$root.tar" "$root.log"' EXIT
$podman import \
	--change 'USER=65532:65532' \
	--change 'WORKDIR=/data' \
	--change 'ENTRYPOINT=["/usr/local/bin/tsdescramble"]' \
	--change 'CMD=["-h"]' \
	"$root.tar" "$name" >/dev/null
echo "$name"
