#!/usr/bin/env bash
# The container image, for real: builds the Dockerfile with podman, checks the image's metadata,
# then runs groved inside it as its non-root user (buildah run --isolation=chroot) twice on the
# same data volume, with the config mounted read-only:
#   1. under the container engines' default seccomp profile, which blocks io_uring: groved must
#      fall back to psync on its own, log it, and export grove_io_backend_info{backend="psync"};
#   2. under deploy/seccomp-grove.json: backend uring.
# Each run checks the image's HEALTHCHECK command reports healthy, answers a Put and a Get with
# grovectl from inside the image (the second run reads the first run's key back from the volume),
# that SIGTERM drains to exit status 0, and that nothing outside the volume was written.
#
#   container_test.sh --source-dir DIR --groved FILE --grovectl FILE
#
# GROVED_FROM=prebuilt (default) builds the image around the given binaries (stripped), which the
# rest of the suite has tested; GROVED_FROM=source builds the Dockerfile's own builder stage from
# the source tree instead (a full compile inside the image, for a manual check).
# Exit status 77 (ctest: skipped) only when podman or buildah cannot run on this machine at all.
set -euo pipefail

source_dir="" groved="" grovectl=""
while [ $# -gt 0 ]; do
  case "$1" in
    --source-dir) source_dir=$2; shift 2 ;;
    --groved) groved=$2; shift 2 ;;
    --grovectl) grovectl=$2; shift 2 ;;
    *) echo "usage: $0 --source-dir DIR --groved FILE --grovectl FILE" >&2; exit 2 ;;
  esac
done
[ -n "$source_dir" ] || { echo "--source-dir is required" >&2; exit 2; }
from=${GROVED_FROM:-prebuilt}
image=localhost/grove:ci-test
default_profile=/usr/share/containers/seccomp.json
grove_profile=$source_dir/deploy/seccomp-grove.json
start=$(date +%s)

step() { printf '\n== %s (%ds)\n' "$*" $(($(date +%s) - start)); }
fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }

# ---- can containers run here at all? --------------------------------------------------------
command -v podman >/dev/null 2>&1 || skip "podman is not installed (scripts/install-deps.sh installs it)"
command -v buildah >/dev/null 2>&1 || skip "buildah is not installed (scripts/install-deps.sh installs it)"
podman info >/dev/null 2>&1 || skip "podman cannot run on this machine: $(podman info 2>&1 | tail -n1)"
[ "$(id -u)" -eq 0 ] || skip "needs root (chroot isolation, a network namespace, chown of the volume)"
unshare --net true 2>/dev/null || skip "cannot create a network namespace (unshare --net)"
[ -f "$default_profile" ] || fail "$default_profile missing (package golang-github-containers-common)"

work=$(mktemp -d -t grove-container-test.XXXXXX)
containers=()
cleanup() {
  for c in "${containers[@]}"; do buildah rm "$c" >/dev/null 2>&1 || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# ---- base images --------------------------------------------------------------------------
step "base images"
bash "$source_dir/scripts/offline-base-image.sh"

# ---- build ----------------------------------------------------------------------------------
if [ "$from" = prebuilt ]; then
  [ -x "$groved" ] && [ -x "$grovectl" ] || fail "--groved and --grovectl must be built binaries"
  step "build context: Dockerfile, .dockerignore, deploy/grove.yaml, prebuilt/ (stripped binaries)"
  ctx=$work/context
  mkdir -p "$ctx/deploy" "$ctx/prebuilt"
  cp "$source_dir/Dockerfile" "$source_dir/.dockerignore" "$ctx/"
  cp "$source_dir/deploy/grove.yaml" "$ctx/deploy/"
  strip --strip-debug -o "$ctx/prebuilt/groved" "$groved"
  strip --strip-debug -o "$ctx/prebuilt/grovectl" "$grovectl"
else
  ctx=$source_dir
fi
step "podman build (GROVED_FROM=$from)"
# --format docker keeps HEALTHCHECK (the OCI image format has no field for it).
podman build --isolation=chroot --network=host --format docker \
  --build-arg GROVED_FROM="$from" --label grove.ci-test=1 -t "$image" "$ctx"
# Earlier builds of this test's tag, now untagged: remove them (layer cache stays).
podman image prune -f --filter label=grove.ci-test=1 >/dev/null 2>&1 || true

# ---- image metadata -------------------------------------------------------------------------
step "image metadata"
inspect() { podman image inspect --format "$1" "$image"; }
user=$(inspect '{{.Config.User}}')
echo "user: $user"
[[ "$user" =~ ^[0-9]+:[0-9]+$ ]] || fail "USER must be numeric uid:gid, got '$user'"
[ "${user%%:*}" -ne 0 ] || fail "USER is root"
ports=$(inspect '{{range $p, $v := .Config.ExposedPorts}}{{$p}} {{end}}')
echo "exposed: $ports"
for p in 7400/tcp 7401/tcp; do [[ " $ports " == *" $p "* ]] || fail "EXPOSE lacks $p"; done
volumes=$(inspect '{{range $v, $x := .Config.Volumes}}{{$v}} {{end}}')
echo "volumes: $volumes"
[[ " $volumes " == *" /var/lib/grove "* ]] || fail "VOLUME /var/lib/grove missing"
entrypoint=$(inspect '{{json .Config.Entrypoint}}')
echo "entrypoint: $entrypoint"
[ "$entrypoint" = '["/usr/local/bin/groved","--config","/etc/grove/grove.yaml"]' ] ||
  fail "unexpected ENTRYPOINT $entrypoint"
healthcheck=$(podman image inspect "$image" | python3 -c 'import json,sys; h=json.load(sys.stdin)[0]["Healthcheck"]; print(json.dumps(h))')
echo "healthcheck: $healthcheck"
[[ "$healthcheck" == *"/readyz"* && "$healthcheck" == *"7401"* ]] || fail "HEALTHCHECK must probe /readyz on 7401"
health_cmd=$(python3 -c 'import json,sys; t=json.loads(sys.argv[1])["Test"]; assert t[0]=="CMD"; print(json.dumps(t[1:]))' "$healthcheck")
echo "image size: $(inspect '{{.Size}}') bytes"
# What a fresh volume on the image's VOLUME starts as (Docker copies it): owned by the USER.
probe=grove-ci-test-$$-probe
buildah from --name "$probe" "$image" >/dev/null
containers+=("$probe")
volume_owner=$(buildah run --isolation=chroot "$probe" -- stat -c '%u:%g' /var/lib/grove)
echo "/var/lib/grove in the image: owner $volume_owner"
[ "$volume_owner" = "$user" ] || fail "/var/lib/grove is owned by $volume_owner, not the USER $user"
missing=$(buildah run --isolation=chroot "$probe" -- bash -c \
  'ldd /usr/local/bin/groved /usr/local/bin/grovectl | grep "not found" || true')
[ -z "$missing" ] || fail "shared libraries missing in the image: $missing"
echo "shared libraries: all found (ldd)"

# ---- the run inside the container -------------------------------------------------------------
# One script runs inside the container: starts the image's entrypoint in the background, polls
# the image's health check command, uses grovectl, reads /metrics, sends SIGTERM. It runs in a
# network namespace of its own, so the image's default ports never meet the host's.
mkdir -p "$work/volume" "$work/probe"
touch "$work/volume/.host-volume"
chown -R 10001:10001 "$work/volume"
# The entrypoint and the health check command, NUL-separated, for the script to run as they are.
python3 -c 'import json,sys; sys.stdout.write("".join(a + "\0" for a in json.loads(sys.argv[1])))' \
  "$entrypoint" >"$work/probe/entrypoint.argv"
python3 -c 'import json,sys; sys.stdout.write("".join(a + "\0" for a in json.loads(sys.argv[1])))' \
  "$health_cmd" >"$work/probe/health.argv"
cat >"$work/probe/run.sh" <<'EOF'
#!/bin/bash
# Runs inside the image. $1: "put" to write the key, "get" to expect it from an earlier run.
set -u
mode=$1
mapfile -d '' -t entry </probe/entrypoint.argv
mapfile -d '' -t health </probe/health.argv
echo "inside: uid=$(id -u) gid=$(id -g)"
[ -e /var/lib/grove/.host-volume ] && echo "volume: mounted" || echo "volume: not the test's"
echo "volume before: $(ls /var/lib/grove/data 2>/dev/null | tr '\n' ' ')"
"${entry[@]}" 2>/var/lib/grove/groved.log &
pid=$!
healthy=no
for _ in $(seq 1 120); do
  if "${health[@]}" 2>/dev/null; then healthy=yes; break; fi
  kill -0 $pid 2>/dev/null || break
  sleep 0.5
done
echo "healthcheck: $healthy"
echo "groved uid: $(sed -n 's/^Uid:[[:space:]]*\([0-9]*\).*/\1/p' /proc/$pid/status)"
if touch /etc/grove/grove.yaml 2>/dev/null; then echo "config: writable"; else echo "config: read-only"; fi
if [ "$mode" = put ]; then
  grovectl --addr 127.0.0.1:7400 put container-key "value from the first run" && echo "put: ok"
fi
echo "get: $(grovectl --addr 127.0.0.1:7400 get container-key)"
echo "health: $(grovectl --addr 127.0.0.1:7400 health)"
exec 3<>/dev/tcp/127.0.0.1/7401
printf 'GET /metrics HTTP/1.0\r\n\r\n' >&3
grep -E '^grove_(io_backend_info|index_info|ready)[{ ]' <&3 | sed 's/^/metric: /'
exec 3<&-
kill -TERM $pid
wait $pid
echo "exit status: $?"
sed 's/^/log: /' /var/lib/grove/groved.log
EOF
chmod 0755 "$work/probe/run.sh"

run_in_container() {  # profile expected-backend put|get
  local profile=$1 expect=$2 mode=$3 name
  name=grove-ci-test-$$-$expect
  buildah rm "$name" >/dev/null 2>&1 || true
  buildah from --name "$name" --security-opt seccomp="$profile" "$image" >/dev/null
  containers+=("$name")
  # The test's directory stands in for the runtime's volume at the image's VOLUME path. buildah
  # 1.28 sometimes mounts its own copy of an image volume over a -v bind at the same path, so the
  # working container forgets the VOLUME (the image keeps it; checked above).
  buildah config --volume /var/lib/grove- "$name"
  touch "$work/stamp-$expect"
  unshare --net bash -c '
    ip link set lo up
    exec buildah run --isolation=chroot --network=host \
      -v "$1:/var/lib/grove" -v "$2:/etc/grove/grove.yaml:ro" -v "$3:/probe:ro" \
      "$4" -- bash /probe/run.sh "$5"' _ \
    "$work/volume" "$source_dir/deploy/grove.yaml" "$work/probe" "$name" "$mode" |
    tee "$work/out-$expect.txt"
  # groved and grovectl write only to the volume: nothing in the container's root filesystem
  # changed (buildah makes /run and the /probe mount point), so a read-only root filesystem works.
  local mnt changed
  mnt=$(buildah mount "$name")
  changed=$(find "$mnt" -xdev -newer "$work/stamp-$expect" ! -path "$mnt" ! -path "$mnt/run" ! -path "$mnt/probe" |
            sed "s|^$mnt||" | tr '\n' ' ')
  buildah umount "$name" >/dev/null
  echo "root filesystem changes: ${changed:-none}" | tee -a "$work/out-$expect.txt"
}

check_run() {  # expected-backend
  local out=$work/out-$1.txt
  grep -qx "inside: uid=10001 gid=10001" "$out" || fail "$1 run: not running as 10001:10001"
  grep -qx "volume: mounted" "$out" || fail "$1 run: the test's volume is not at /var/lib/grove"
  grep -qx "groved uid: 10001" "$out" || fail "$1 run: groved is not running as uid 10001"
  grep -qx "config: read-only" "$out" || fail "$1 run: the mounted config is writable"
  grep -qx "healthcheck: yes" "$out" || fail "$1 run: the image's health check never passed"
  grep -qx "get: value from the first run" "$out" || fail "$1 run: Get did not return the value"
  grep -qx "health: SERVING" "$out" || fail "$1 run: grovectl health is not SERVING"
  grep -q "^metric: grove_io_backend_info{backend=\"$1\"} 1" "$out" ||
    fail "$1 run: grove_io_backend_info{backend=\"$1\"} not exported"
  grep -q "^log: .*io backend: $1" "$out" || fail "$1 run: no log line naming the io backend $1"
  grep -qx "exit status: 0" "$out" || fail "$1 run: groved did not exit 0 after SIGTERM"
  grep -qx "root filesystem changes: none" "$out" || fail "$1 run: files changed outside the volume"
}

step "run 1: default seccomp profile ($default_profile): io_uring blocked"
run_in_container "$default_profile" psync put
check_run psync
grep -q '^log: .*io backend: psync (io_uring unavailable' "$work/out-psync.txt" ||
  fail "psync run: the fallback was not logged as such"

step "run 2: deploy/seccomp-grove.json (default + io_uring), same volume"
run_in_container "$grove_profile" uring get
check_run uring

step "passed"
echo "container test: 2 passed, 0 failed ($(($(date +%s) - start)) s)"
