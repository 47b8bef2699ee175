#!/usr/bin/env bash
# Seeds the local container store with debian:bookworm and debian:bookworm-slim built from Debian's
# packages (debootstrap), for machines that reach Debian's package archive but no image registry.
# After it, `podman build --isolation=chroot --network=host .` resolves `FROM debian:bookworm[-slim]`
# locally. Containers run with `buildah run --isolation=chroot` (podman run needs cgroups and rlimits
# that such machines may not grant). Both tags name the same minbase root filesystem.
# Idempotent: exits at once when both images are present. Needs root (debootstrap, podman import).
set -euo pipefail
need() { command -v "$1" >/dev/null 2>&1; }
if ! need podman || ! need buildah || ! need debootstrap; then
  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q podman buildah debootstrap >/dev/null
fi
have() { podman image exists "docker.io/library/debian:$1" 2>/dev/null; }
if have bookworm && have bookworm-slim; then echo "base images present"; exit 0; fi
mirror=$(sed -n 's/^URIs: *\(http[^ ]*debian\)$/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n1)
mirror=${mirror:-http://deb.debian.org/debian}
root=$(mktemp -d -t bookworm-rootfs.XXXXXX)
trap 'rm -rf "$root"' EXIT
debootstrap --variant=minbase bookworm "$root" "$mirror" >/dev/null
# The same sources inside the image as on the host, so apt-get works during builds.
mkdir -p "$root/etc/apt/sources.list.d"
[ -f /etc/apt/sources.list.d/debian.sources ] && cp /etc/apt/sources.list.d/debian.sources "$root/etc/apt/sources.list.d/"
tar -C "$root" -c . | podman import - docker.io/library/debian:bookworm >/dev/null
podman tag docker.io/library/debian:bookworm docker.io/library/debian:bookworm-slim
echo "seeded docker.io/library/debian:bookworm and :bookworm-slim"
