# Sourced by the checks and by .ci/run: the pinned tools the checks run, each installed once
# for all of them, and the server binary they run.
#
#   tools_npm      node_modules/ as package-lock.json pins it (`npm ci`): every JavaScript
#                  tool (Redocly, Spectral, Optic, Prism, swagger-cli, playwright-core, tsc)
#   tools_python   target/venv-tools/ as scripts/requirements.txt pins it (pip, every package
#                  with its hash): Schemathesis, openapi-spec-validator, the OTLP protobuf
#                  messages, openapi-python-client and openapi-generator
#   tools_apt P…   Debian's packages P… that are not installed yet (root only)
#   workspace_bin N  prints the path of the workspace's binary N (wpds, openapi-compat):
#                  $WPDS_BIN_DIR/N when WPDS_BIN_DIR is set (.ci/run hands the checks the
#                  binaries it built with the tests, target/ci), else built first with
#                  `cargo build --profile ci`; wpds_binary is workspace_bin wpds
#
# Each install holds a lock (flock) and leaves a stamp of what it installed, so .ci/run can
# start them in the background at its top and a check that needs one waits for it: the
# second caller finds it done. What is installed is reinstalled only when its pin changed.

tools_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

# Runs "$@" holding the lock NAME (target/.lock-NAME).
tools_locked() {
  local name=$1
  shift
  mkdir -p "$tools_root/target"
  (
    flock 9
    "$@"
  ) 9>"$tools_root/target/.lock-$name"
}

tools_npm() {
  tools_locked npm tools_npm_install
}

tools_npm_install() {
  local stamp="$tools_root/node_modules/.installed-package-lock.json"
  cmp -s "$tools_root/package-lock.json" "$stamp" 2>/dev/null && return 0
  echo "tools: npm ci (package-lock.json)" >&2
  (cd "$tools_root" && NO_UPDATE_NOTIFIER=1 PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 \
    npm ci --no-audit --no-fund --loglevel=error >&2)
  cp "$tools_root/package-lock.json" "$stamp"
}

tools_python() {
  tools_locked python tools_python_install
}

tools_python_install() {
  local venv="$tools_root/target/venv-tools" requirements="$tools_root/scripts/requirements.txt"
  cmp -s "$requirements" "$venv/installed-requirements.txt" 2>/dev/null && return 0
  echo "tools: pip install -r scripts/requirements.txt into target/venv-tools" >&2
  rm -rf -- "$venv"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
    --require-hashes --only-binary=:all: -r "$requirements" >&2
  cp -- "$requirements" "$venv/installed-requirements.txt"
}

tools_apt() {
  tools_locked apt tools_apt_install "$@"
}

tools_apt_install() {
  local missing=() package
  for package in "$@"; do
    dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
  done
  [ "${#missing[@]}" -eq 0 ] && return 0
  echo "tools: apt-get install ${missing[*]}" >&2
  # Installed, never started: a package's service (prometheus, pgbouncer) is the checks' to run.
  printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
  local status=$?
  rm -f /usr/sbin/policy-rc.d
  return "$status"
}

workspace_bin() {
  local name=$1
  if [[ -n ${WPDS_BIN_DIR:-} ]]; then
    [[ -x $WPDS_BIN_DIR/$name ]] || { echo "tools: no $name in WPDS_BIN_DIR=$WPDS_BIN_DIR" >&2; return 1; }
    echo "$WPDS_BIN_DIR/$name"
    return 0
  fi
  (cd "$tools_root" && cargo build --workspace --profile ci --quiet --bin "$name") >&2
  echo "${CARGO_TARGET_DIR:-$tools_root/target}/ci/$name"
}

wpds_binary() {
  workspace_bin wpds
}
