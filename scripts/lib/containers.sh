# Sourced by the checks that run containers (check-container, check-compose,
# check-kubernetes). No image registry is reachable here, so every image is made locally
# from Debian's packages:
#
#   containers_setup        podman's settings for this run, in a containers.conf of its own
#                           (CONTAINERS_CONF, exported, so podman-compose and
#                           `podman kube play` read it too): default ulimits within this
#                           host's, and runc where the default runtime cannot start a
#                           container (a cgroup v1/v2 hybrid host). Fails, saying why, when
#                           podman cannot run a container. Containers find each other by
#                           name through CNI's dnsname plugin (Debian's
#                           golang-github-containernetworking-plugin-dnsname; .ci/run
#                           installs it): netavark's port forwarding from 127.0.0.1 needs
#                           route_localnet on the host, which a check should not change.
#   containers_base         the runtime base, localhost/wpds-check-base:bookworm-slim: a
#                           Debian bookworm root filesystem (debootstrap --variant=minbase,
#                           with libpq5), `podman import`ed once and kept for the next run
#                           (under a lock: .ci/run starts it early)
#   containers_build_wpds TAG
#                           the image of ./Containerfile, tagged TAG, from the binary the
#                           checks run (scripts/lib/tools.sh's wpds_binary; the Rust base
#                           image cannot be fetched either) and its SBOM (scripts/sbom), with
#                           the labels a release build passes; sets WPDS_IMAGE_VERSION and
#                           WPDS_IMAGE_CONTRACT
#
# The base is made from the archive this machine's apt reaches (scripts/lib/debian-archive).

containers_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=tools.sh
source "$containers_root/scripts/lib/tools.sh"
containers_base_image=localhost/wpds-check-base:bookworm-slim

containers_setup() {
  local conf probe
  conf=$(mktemp -d)/containers.conf
  printf '[containers]\ndefault_ulimits = ["nofile=4096:4096", "nproc=4096:4096"]\n' >"$conf"
  export CONTAINERS_CONF=$conf
  containers_base || return
  if ! probe=$(podman run --rm "$containers_base_image" true 2>&1); then
    printf '[engine]\nruntime = "runc"\n' >>"$conf"
    if ! podman run --rm "$containers_base_image" true >/dev/null 2>&1; then
      echo "containers: podman cannot start a container: $probe" >&2
      return 1
    fi
    echo "containers: the default runtime cannot start containers here ($probe); using runc" >&2
  fi
}

containers_base() {
  tools_locked container-base containers_make_base
}

containers_make_base() {
  podman image exists "$containers_base_image" && return 0
  command -v debootstrap >/dev/null || { echo "containers: debootstrap is not installed" >&2; return 1; }
  local rootfs archive uri signed_by
  rootfs=$(mktemp -d)
  echo "containers: making $containers_base_image with debootstrap (bookworm, minbase + libpq5)" >&2
  # The archive as this machine's apt reaches it (its mirror or proxy, and keyring).
  archive=$("$containers_root/scripts/lib/debian-archive") || return 1
  uri=$(sed -n 1p <<<"$archive")
  signed_by=$(sed -n 2p <<<"$archive")
  debootstrap --variant=minbase --include=libpq5,ca-certificates ${signed_by:+--keyring="$signed_by"} \
    bookworm "$rootfs" "$uri" >/dev/null || return
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  tar -C "$rootfs" -c . | podman import --quiet - "$containers_base_image" >/dev/null
  rm -rf "$rootfs"
}

containers_build_wpds() {
  WPDS_IMAGE_VERSION=$(sed -n 's/^version = "\(.*\)"/\1/p' "$containers_root/Cargo.toml" | head -1)
  WPDS_IMAGE_CONTRACT=$(sed -n 's/^  version: \(.*\)$/\1/p' "$containers_root/openapi/openapi.yaml" | head -1)
  # Under a lock (in a subshell: it sets nothing here): the checks that build it may run
  # at once, and share the build context.
  tools_locked container-build containers_build_wpds_locked "$@"
}

containers_build_wpds_locked() {
  local tag=$1 context="$containers_root/target/container"
  mkdir -p "$context"
  cp "$(wpds_binary)" "$context/wpds" || return
  "$containers_root/scripts/sbom" "$context/wpds.cdx.json" >&2 || return
  (cd "$containers_root" && podman build --quiet --format docker --build-arg RUNTIME_IMAGE="$containers_base_image" \
    --build-arg BINARY_FROM=prebuilt --build-arg PREBUILT=target/container/wpds \
    --build-arg PREBUILT_SBOM=target/container/wpds.cdx.json --build-arg VERSION="$WPDS_IMAGE_VERSION" \
    --build-arg CONTRACT_VERSION="$WPDS_IMAGE_CONTRACT" \
    --build-arg REVISION="$(git rev-parse HEAD 2>/dev/null || echo unknown)" \
    -t "$tag" -f Containerfile . >/dev/null)
}

# containers_substitutes: the stand-ins for the images deploy/compose/cluster.compose.yaml
# names (deploy/compose/substitutes/Containerfile says which and what they cannot show),
# tagged localhost/wpds-substitute/NAME:debian (NAME: postgres, pgbouncer, haproxy,
# prometheus), on a base of Debian's packages made once and kept,
# localhost/wpds-compose-base:bookworm (postgresql-15, haproxy, prometheus, and the
# libraries of the current PgBouncer scripts/build-pgbouncer builds).
containers_substitutes() {
  tools_locked compose-base containers_make_compose_base || return
  local context="$containers_root/target/container/substitutes" target
  rm -rf "$context" && mkdir -p "$context"
  cp "$containers_root"/deploy/compose/substitutes/* "$context/"
  cp "$("$containers_root/scripts/build-pgbouncer")" "$context/pgbouncer" || return
  for target in postgres pgbouncer haproxy prometheus; do
    podman build --quiet --target "$target" -t "localhost/wpds-substitute/$target:debian" \
      -f "$context/Containerfile" "$context" >/dev/null || return
  done
}

containers_make_compose_base() {
  local image=localhost/wpds-compose-base:bookworm rootfs archive uri signed_by
  podman image exists "$image" && return 0
  rootfs=$(mktemp -d)
  echo "containers: making $image with debootstrap (postgresql-15, haproxy, prometheus, libevent, c-ares)" >&2
  archive=$("$containers_root/scripts/lib/debian-archive") || return 1
  uri=$(sed -n 1p <<<"$archive")
  signed_by=$(sed -n 2p <<<"$archive")
  debootstrap --variant=minbase --include=postgresql-15,haproxy,prometheus,libevent-2.1-7,libc-ares2,libssl3,ca-certificates \
    ${signed_by:+--keyring="$signed_by"} bookworm "$rootfs" "$uri" >/dev/null || return
  # The packages' own clusters and files are not the stand-ins' (the entrypoints make theirs).
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/lib/postgresql/15
  tar -C "$rootfs" -c . | podman import --quiet - "$image" >/dev/null
  rm -rf "$rootfs"
}
