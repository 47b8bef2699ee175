#!/usr/bin/env bash
# Installs every Debian 12 package Grove needs to build, test, benchmark and package.
# Idempotent: packages already present are skipped. Works as root or through sudo.
set -euo pipefail

packages=(
  # toolchain and build
  build-essential cmake ninja-build ccache pkg-config git
  clang-14 libclang-rt-14-dev clang-format clang-tidy
  # engine
  liburing-dev libspdlog-dev libfmt-dev libyaml-cpp-dev
  # server and client
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  prometheus-cpp-dev libcli11-dev nlohmann-json3-dev
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev librocksdb-dev
  python3 python3-matplotlib curl
  # the Python client (client/python) and its tests: etcd:// routing reads etcd with
  # python3-etcd3; mypy checks its types; build/venv and the package test use python3-venv, and
  # `pip install --no-build-isolation client/python` Debian's setuptools and wheel
  python3-grpcio python3-protobuf python3-pytest python3-etcd3 mypy
  python3-venv python3-pip python3-setuptools python3-wheel
  # integration tests generate TLS certificates with the openssl command
  openssl
  # cluster mode keeps its metadata in etcd; the cluster tests run a real one (v3 API)
  etcd-server
  # replicated ranges: Raft groups on libraft and its libuv IO (docs/libraft.md)
  libraft-dev libuv1-dev
  # deployment tests (tests/deploy): the image is built with podman and run with buildah, from
  # base images made with debootstrap (scripts/offline-base-image.sh); a real Prometheus and
  # promtool check the dashboards and alert rules; python3-yaml reads the manifests and
  # docker-compose checks the Compose file against its schema; iproute2 brings up the loopback
  # of the container test's network namespace
  podman buildah debootstrap prometheus python3-yaml docker-compose iproute2
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
  sudo=()
elif command -v sudo >/dev/null 2>&1; then
  sudo=(sudo)
else
  echo "install-deps: need root or sudo to install: ${missing[*]}" >&2
  exit 1
fi

echo "install-deps: installing ${missing[*]}"
"${sudo[@]}" apt-get update -q
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
