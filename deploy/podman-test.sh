#!/usr/bin/env bash
# Builds the image without a registry (build-image.sh) and runs the batch image as an Indexed
# Job's pods would be run: one container per index with JOB_COMPLETION_INDEX, two at a time, on a
# volume, with a read-only root file system and the image's unprivileged user. Checks every
# output byte for byte, the exit statuses a podFailurePolicy acts on, the skipping of finished
# jobs, and the image's size. Where containers cannot run it says why and exits 0, unless it
# must run: with --require, or CI set (CI=1, CI=true), a test that cannot run fails, so that a
# CI machine that lost podman or runc does not pass it unnoticed.
#   deploy/podman-test.sh [--require]
set -euo pipefail
cd "$(dirname "$0")/.."

require=""
case "${CI:-}" in "" | 0 | false) ;; *) require="CI=$CI" ;; esac
case "${1:-}" in
--require) require="--require" ;;
"") ;;
*) echo "usage: deploy/podman-test.sh [--require]" >&2; exit 2 ;;
esac
skip() {
	if [ -n "$require" ]; then echo "FAIL: podman test cannot run ($require): $*"; exit 1; fi
	echo "podman test skipped: $*"; exit 0
}
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

{"in": "demo-scrambled.ts", "out": "clear/4.ts", "cw-file": "missing-keys.txt"}
JOBS
chmod -R a+rwX "$data" # the image's user writes there

pod() { # index: runs that index's pod as a Job would, and prints its exit status
	local status=0
	timeout 120 $PODMAN run --rm --read-only -e JOB_COMPLETION_INDEX="$1" -v "$data:/data" \
		"$image" batch -manifest jobs.jsonl -stats-dir stats >"$work/pod$1.log" 2>&1 || status=$?
	echo "$status"
}

# Two at a time, as parallelism: 2 would run them. Index 4's key file is not there and index 5 is
# past the manifest's end (the blank line is no job): each fails alone.
declare -A status
for pair in "0 1" "2 3" "4 5"; do
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
for i in 0 1 2 3 4 5; do
	want=0
	[ "$i" = 3 ] && want=3 # no key fits: the status a podFailurePolicy sends to FailIndex
	[ "$i" -ge 4 ] && want=4 # the job's own values: FailIndex too
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
for i in 4 5; do
	grep -q '"exit_status": 4' "$data/stats/$i.json" && grep -q '"error": ' "$data/stats/$i.json" ||
		{ echo "FAIL: job $i's statistics do not say exit 4 and why"; fail=1; }
done

# A retried pod skips its finished job.
again=$(pod 0)
if [ "$again" != 0 ] || ! grep -q 'skipped' "$work/pod0.log"; then
	echo "FAIL: a retried pod redid its finished job (exit $again)"; cat "$work/pod0.log"; fail=1
fi

# The SRT image (SRT=1 build-image.sh): the same empty base and user, libsrt and OpenSSL linked
# in. Two of its containers on the host's network: one listens for the stream over SRT,
# encrypted, and writes what it receives to the volume; the other descrambles the sample and
# calls it. What comes out is the clear sample. Skipped where libsrt's development files are
# not installed.
free_port() { python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); t=socket.socket(); t.bind(("127.0.0.1", s.getsockname()[1])); print(s.getsockname()[1])'; }
srt_image=localhost/tsdescramble:ci-srt
srt_note="SRT image skipped: libsrt-openssl-dev, pkg-config or g++ is not installed"
if pkg-config --exists srt 2>/dev/null && command -v g++ >/dev/null; then
	SRT=1 timeout 600 deploy/build-image.sh "$srt_image"
	trap 'podman rmi -f "$image" "$srt_image" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
	srt_size=$(podman image inspect --format '{{.Size}}' "$srt_image")
	echo "SRT image: $(timeout 60 $PODMAN run --rm "$srt_image" -version | tail -1), $srt_size bytes"
	if [ "$srt_size" -gt $((25 * 1000 * 1000)) ]; then
		echo "FAIL: the SRT image is over 25 MB"; fail=1
	fi
	srt_port=$(free_port)
	srt_pass="ci-passphrase-$RANDOM$RANDOM"
	timeout 90 $PODMAN run --rm --read-only --network host -v "$data:/data" "$srt_image" \
		-in "srt://127.0.0.1:$srt_port?mode=listener&passphrase=$srt_pass" -out srt-clear.ts \
		-cw-file demo-keys.txt -packets 4611 -timeout 30s >"$work/srt-in.log" 2>&1 &
	srt_in=$!
	hex=$(printf ':%04X ' "$srt_port")
	for _ in $(seq 200); do grep -q "$hex" /proc/net/udp && break; sleep 0.05; done
	srt_status=0
	timeout 90 $PODMAN run --rm --read-only --network host -v "$data:/data" "$srt_image" \
		-in demo-scrambled.ts -out "srt://127.0.0.1:$srt_port?passphrase=$srt_pass" -cw-file demo-keys.txt \
		-pace=false >"$work/srt-out.log" 2>&1 || srt_status=$?
	wait "$srt_in" || srt_status=$?
	if [ "$srt_status" != 0 ] || grep -q "$srt_pass" "$work/srt-in.log" "$work/srt-out.log"; then
		echo "FAIL: SRT between two containers of the image (exit $srt_status)"; cat "$work/srt-in.log" "$work/srt-out.log"; fail=1
	else
		check "$data/srt-clear.ts" samples/demo-clear.ts
	fi
	srt_note="SRT image: a caller and a listener, encrypted"
else
	echo "$srt_note"
fi

# The live Deployment, played by podman as a node would run it: its Secret, then the manifest
# with its multicast groups turned to loopback ports (a host's groups may not loop back here)
# and its metrics address, the pod's IP from the downward API, to a free loopback port (podman
# 4.3 refuses the fieldRef status.podIP). Its ports list goes: podman maps ports only on a
# network of its own, where Kubernetes reads it, with hostNetwork, as a note. A sender on the
# host feeds it the sample, scrambled with the Secret's CW; /healthz must turn ready and /metrics
# count what came, and the descrambled stream must come out at the output address.
if ! command -v catatonit >/dev/null && ! [ -x /usr/libexec/podman/catatonit ]; then
	# A pod's infra container runs catatonit, which podman builds its pause image from.
	if [ "$fail" != 0 ]; then exit 1; fi
	echo "podman test passed: 6 indexes, 2 at a time, outputs identical, exit statuses 0, 3 and 4, finished job skipped; $srt_note"
	skip "the live Deployment: podman kube play needs catatonit (Debian: apt-get install catatonit)"
fi
inport=$(free_port)
outport=$(free_port)
mport=$(free_port)
cw=11223366445566ff
# The Secret, as podman 4.3 keeps one for secretKeyRef: a JSON object of its keys, each value in
# base64 (podman takes neither a Kubernetes Secret object nor its "stringData" there).
printf '{"cw": "%s"}' "$(printf %s "$cw" | base64)" >"$work/secret.json"
sed -e "s|udp://@239.1.1.1:1234|udp://@127.0.0.1:$inport|" -e "s|udp://239.1.2.1:1234|udp://127.0.0.1:$outport|" \
	-e "s|- \$(POD_IP):9400|- 127.0.0.1:$mport|" -e '/- name: POD_IP$/,/fieldPath: status.podIP$/d' \
	-e "s|port: 9400|port: $mport|" -e '/^ *ports:$/,/containerPort:/d' \
	deploy/kubernetes/deployment.yaml >"$work/deployment.yaml"
grep -q "udp://@127.0.0.1:$inport" "$work/deployment.yaml" && grep -q "127.0.0.1:$mport" "$work/deployment.yaml" &&
	! grep -q 'status.podIP' "$work/deployment.yaml" ||
	{ echo "FAIL: the Deployment's addresses were not found to rewrite"; exit 1; }
podman tag "$image" localhost/tsdescramble:latest
sender=""
down() {
	local status=$?
	if [ -n "$sender" ]; then kill "$sender" 2>/dev/null || true; wait "$sender" 2>/dev/null || true; fi
	timeout 60 $PODMAN kube play --down "$work/deployment.yaml" >/dev/null 2>&1 || true
	podman secret rm tsdescramble-service-1 >/dev/null 2>&1 || true
	podman rmi -f localhost/tsdescramble:latest "$image" "$srt_image" >/dev/null 2>&1 || true
	rm -rf "$work"
	exit "$status"
}
trap down EXIT
podman secret rm tsdescramble-service-1 >/dev/null 2>&1 || true # left by a run that was killed
podman secret create tsdescramble-service-1 "$work/secret.json" >/dev/null
timeout 120 $PODMAN kube play --down "$work/deployment.yaml" >/dev/null 2>&1 || true # the same
timeout 120 $PODMAN kube play "$work/deployment.yaml" >/dev/null
# The sample plays for about 25 s at its PCR's pace, which covers the checks.
"$work/tsdescramble" scramble -q -in samples/demo-clear.ts -out "udp://127.0.0.1:$inport" -cw "$cw" &
sender=$!
# What the Deployment sends, received on the host: 2000 packets, within 30 s.
"$work/tsdescramble" -q -in "udp://@127.0.0.1:$outport" -out "$work/live-out.ts" -cw "$cw" -packets 2000 -timeout 30s &
receiver=$!
healthy=""
for _ in $(seq 60); do
	if health=$(curl -fsS --max-time 2 "http://127.0.0.1:$mport/healthz" 2>&1); then healthy=yes; break; fi
	sleep 0.5
done
if [ -z "$healthy" ]; then
	echo "FAIL: the Deployment's /healthz did not turn ready within 30 s: $health"
	timeout 30 $PODMAN pod logs "$(podman pod ps -q --filter name=tsdescramble-service-1 | head -1)" 2>&1 | tail -5
	fail=1
else
	echo "Deployment ready: $health"
	metrics=$(curl -fsS --max-time 5 "http://127.0.0.1:$mport/metrics")
	for m in 'tsdescramble_packets_descrambled_total{pid="0x0100"} [1-9]' 'tsdescramble_received_datagrams_total [1-9]' \
		'tsdescramble_unit_start_checks_total{pid="0x0100",result="good"} [1-9]' 'tsdescramble_sent_datagrams_total [1-9]'; do
		if ! grep -q "^$m" <<<"$metrics"; then echo "FAIL: /metrics has no line $m"; fail=1; fi
	done
fi
if wait "$receiver"; then
	echo "Deployment output: $(($(stat -c %s "$work/live-out.ts") / 188)) packets received on the host"
else
	echo "FAIL: nothing came from the Deployment's output within 30 s"; fail=1
fi

if [ "$fail" != 0 ]; then exit 1; fi
echo "podman test passed: 6 indexes, 2 at a time, outputs identical, exit statuses 0, 3 and 4, finished job skipped; $srt_note; the live Deployment ready, its metrics counting"
