# Grove server image: groved, plus grovectl for checks from inside the container, on
# debian:bookworm-slim with only the shared libraries the two binaries link against.
#
#   docker build -t grove .
#   docker run -d --name grove -p 127.0.0.1:7400:7400 -p 127.0.0.1:7401:7401 \
#     -v grove-data:/var/lib/grove --security-opt seccomp=deploy/seccomp-grove.json grove
#
# Ports: 7400 gRPC (grove.v1.KV, health, reflection), 7401 HTTP (/metrics, /livez, /readyz).
# Data: the volume /var/lib/grove (the database lives in /var/lib/grove/data). It must be a
# filesystem with O_DIRECT (ext4, XFS), not tmpfs.
# Config: /etc/grove/grove.yaml, a copy of deploy/grove.yaml. Mount your own over it, read-only:
#   -v ./grove.yaml:/etc/grove/grove.yaml:ro
# The process runs as the numeric user 10001:10001, never as root. docs/operations.md has the rest.
#
# Where the binaries come from (build argument GROVED_FROM):
#   source    (default) the build stage compiles them from this tree on debian:bookworm.
#   prebuilt  the build stage takes prebuilt/groved and prebuilt/grovectl from the build context:
#             binaries already built on Debian 12 (bookworm), e.g. by `make build`.
# The project's container test uses `prebuilt` with the binaries the rest of its test suite has
# just built and tested: compiling them a second time inside the builder would add a cold build
# (about 7 CPU-minutes for the two binaries, plus the build dependencies) to every CI run. The
# runtime stage is the same either way. (One build stage with a switch rather than one stage per
# source: podman/buildah 4.3 cannot pick a stage named by an ARG's default value.)

# ---- build: groved and grovectl into /out ---------------------------------------------------
FROM debian:bookworm AS build
ARG GROVED_FROM=source
RUN case "$GROVED_FROM" in \
      prebuilt) ;; \
      source) apt-get update \
        && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
             build-essential cmake ninja-build ccache pkg-config \
             liburing-dev libspdlog-dev libfmt-dev libyaml-cpp-dev \
             libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler libssl-dev \
             prometheus-cpp-dev libcli11-dev nlohmann-json3-dev libraft-dev libuv1-dev \
        && rm -rf /var/lib/apt/lists/* ;; \
      *) echo "GROVED_FROM must be source or prebuilt, not '$GROVED_FROM'" >&2; exit 1 ;; \
    esac
WORKDIR /src
# The context holds only what .dockerignore lets through: the sources (CMakeLists.txt, proto/,
# config/, server/, client/), deploy/grove.yaml, and prebuilt/ when it exists.
COPY . .
# Tests are not built (GROVE_BUILD_TESTS=OFF); the ccache directory is a build cache mount, so a
# rebuild after a small change is quick.
RUN --mount=type=cache,target=/root/.cache/ccache \
    mkdir -p /out \
 && if [ "$GROVED_FROM" = prebuilt ]; then \
      install -m 0755 prebuilt/groved prebuilt/grovectl /out/; \
    else \
      cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DGROVE_BUILD_TESTS=OFF \
      && cmake --build build --target groved grovectl \
      && install -m 0755 -s build/server/groved build/client/grovectl /out/; \
    fi

# ---- runtime -----------------------------------------------------------------------------------
FROM debian:bookworm-slim
# The shared libraries groved and grovectl link against (ldd), nothing else: gRPC and protobuf,
# prometheus-cpp and civetweb (the metrics port), spdlog/fmt, yaml-cpp, liburing, libraft and libuv
# (replicated ranges). bash, which the health check uses, is part of every Debian image.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
      libgrpc++1.51 libprotobuf32 libprometheus-cpp-core1.0 libcivetweb1 \
      libspdlog1.10 libfmt9 libyaml-cpp0.7 liburing2 libraft2 libuv1 \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb \
 && groupadd --system --gid 10001 grove \
 && useradd --system --uid 10001 --gid 10001 --home-dir /var/lib/grove --no-create-home \
      --shell /usr/sbin/nologin grove \
 && install -d -o 10001 -g 10001 -m 0750 /var/lib/grove \
 && install -d -m 0755 /etc/grove
COPY --from=build /out/groved /out/grovectl /usr/local/bin/
COPY deploy/grove.yaml /etc/grove/grove.yaml
RUN chmod 0644 /etc/grove/grove.yaml && groved --version

USER 10001:10001
WORKDIR /var/lib/grove
VOLUME ["/var/lib/grove"]
EXPOSE 7400/tcp 7401/tcp
STOPSIGNAL SIGTERM
# /readyz answers 200 only while groved serves (engine open, not draining). The slim image has no
# HTTP client, so bash's /dev/tcp speaks the one request. A first start replays the log before it
# turns ready; --start-period covers that.
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s --retries=3 \
  CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/7401 && printf 'GET /readyz HTTP/1.0\\r\\n\\r\\n' >&3 && head -n1 <&3 | grep -q ' 200 '"]
ENTRYPOINT ["/usr/local/bin/groved", "--config", "/etc/grove/grove.yaml"]
