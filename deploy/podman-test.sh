#!/usr/bin/env bash
# Builds the image without a registry (build-image.sh) and runs the batch image as an Indexed
# Job's pods would be run: one container per index with JOB_COMPLETION_INDEX, two at a time, on a
# volume, with a read-only root file system and the image's unprivileged user. Checks every
# output byte for byte, the exit statuses a podFailurePolicy acts on, the skipping of finished
# jobs, and the image's size. Where containers cannot run it says why and exits 0.
#   deploy/podman-test.sh
set -euo pipefail
cd "$(dirname "$0")/.."

skip() { echo "podman test skipped: $*"; exit 0; }
command -v podman >/dev/null || skip "podman is not installed (Debian: apt-get install podman runc)"
runc=$(command -v runc || true)
[ -n "$runc" ] || skip "runc is not installed (Debian: apt-get install runc)"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# runc with cgroupfs works in unprivileged sandboxes where crun and systemd cgroups do not; no
# default ulimits, since raising a limit may not be allowed there.
printf '[containers]\ndefault_ulimits = []\n' >"$work/containers.conf"
export CONTAINERS_CONF="$work/containers.conf"
export PODMAN="podman --runtime $runc --cgroup-manager cgroupfs"
image=localhost/tsdescramble:ci

if ! out=$(timeout 60 $PODMAN info 2>&1); then
	skip "podman does not work on this machine: $(echo "$out" | tail -1)"
fi
timeout 900 deploy/build-image.sh "$image"
trap 'podman rmi -f "$image" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
if ! out=$(timeout 60 $PODMAN run --rm "$image" -version 2>&1); then
	skip "this machine does not run containers: $(echo "$out" | tail -1)"
fi
echo "image runs: $out"

size=$(podman image inspect --format '{{.Size}}' "$image")
echo "image size: $size bytes"
if [ "$size" -gt $((15 * 1000 * 1000)) ]; then
	echo "FAIL: the image is over 15 MB"; exit 1
fi

data="$work/data"
mkdir -p "$data/clear"
cp samples/demo-scrambled.ts samples/demo-biss.ts samples/demo-clear.ts samples/demo-keys.txt "$data/"
cat >"$data/jobs.jsonl" <<'JOBS'
{"in": "demo-scrambled.ts", "out": "clear/0.ts", "cw-file": "demo-keys.txt"}
{"in": "demo-biss.ts", "out": "clear/1.ts", "biss": "112233445566"}
{"command": "scramble", "in": "demo-clear.ts", "out": "clear/2.ts", "cw-file": "demo-keys.txt", "cp-packets": 800}
{"in": "demo-scrambled.ts", "out": "clear/3.ts", "cw": "a1b2c3d4e5f60718"}
JOBS
chmod -R a+rwX "$data" # the image's user writes there

pod() { # index: runs that index's pod as a Job would, and prints its exit status
	local status=0
	timeout 120 $PODMAN run --rm --read-only -e JOB_COMPLETION_INDEX="$1" -v "$data:/data" \
		"$image" batch -manifest jobs.jsonl -stats-dir stats >"$work/pod$1.log" 2>&1 || status=$?
	echo "$status"
}

# Two at a time, as parallelism: 2 would run them.
declare -A status
for pair in "0 1" "2 3"; do
	set -- $pair
	pod "$1" >"$work/status$1" &
	a=$!
	pod "$2" >"$work/status$2" &
	b=$!
	wait "$a" "$b"
	status[$1]=$(cat "$work/status$1")
	status[$2]=$(cat "$work/status$2")
done
fail=0
for i in 0 1 2 3; do
	want=0
	[ "$i" = 3 ] && want=3 # no key fits: the status a podFailurePolicy sends to FailIndex
	if [ "${status[$i]}" != "$want" ]; then
		echo "FAIL: index $i exited ${status[$i]}, want $want"; cat "$work/pod$i.log"; fail=1
	fi
done

# The same jobs on the host, in-process, for the outputs the samples do not hold.
host="$work/host"
mkdir -p "$host/clear"
cp "$data"/*.ts "$data"/*.txt "$data/jobs.jsonl" "$host/"
go build -o "$work/tsdescramble" ./cmd/tsdescramble
(cd "$host" && "$work/tsdescramble" batch -q -manifest jobs.jsonl -index 2)

head -c 188000 samples/demo-clear.ts >"$work/biss-clear.ts"
check() { # file want
	if cmp "$1" "$2"; then echo "same bytes: ${1#$work/}"; else echo "FAIL: ${1#$work/} differs from ${2#$work/}"; fail=1; fi
}
check "$data/clear/0.ts" samples/demo-clear.ts
check "$data/clear/1.ts" "$work/biss-clear.ts"
check "$data/clear/2.ts" "$host/clear/2.ts"
grep -q '"exit_status": 3' "$data/stats/3.json" || { echo "FAIL: job 3's statistics do not say exit 3"; fail=1; }

# A retried pod skips its finished job.
again=$(pod 0)
if [ "$again" != 0 ] || ! grep -q 'skipped' "$work/pod0.log"; then
	echo "FAIL: a retried pod redid its finished job (exit $again)"; cat "$work/pod0.log"; fail=1
fi

if [ "$fail" != 0 ]; then exit 1; fi
echo "podman test passed: 4 indexes, 2 at a time, outputs identical, exit statuses 0 and 3, finished job skipped"
