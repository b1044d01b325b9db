# Sourced by the other scripts: installs what a fresh machine lacks.
# Everything here is idempotent and quick when already done.
set -euo pipefail

STASIS_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export STASIS_ROOT

stasis_toolchain() {
    local channel
    channel="$(sed -n 's/^channel = "\(.*\)"/\1/p' "$STASIS_ROOT/rust-toolchain.toml")"
    if ! command -v rustup >/dev/null 2>&1; then
        echo "rustup is required (https://rustup.rs)" >&2
        exit 1
    fi
    # rust-toolchain.toml names the targets, but rustup adds them only when it
    # installs the toolchain itself; add them explicitly.
    rustup toolchain install "$channel" --profile minimal \
        --component rustfmt --component clippy \
        --target wasm32-wasip2 --target wasm32-unknown-unknown >/dev/null
}

# A free TCP port on loopback.
stasis_free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# Waits until GET $1/healthz answers, or fails after $2 seconds.
stasis_wait_healthy() {
    local url="$1" limit="${2:-60}" waited=0
    until curl -fsS "$url/healthz" >/dev/null 2>&1; do
        sleep 0.2
        waited=$((waited + 1))
        if [ "$waited" -ge $((limit * 5)) ]; then
            echo "no answer from $url/healthz after ${limit}s" >&2
            return 1
        fi
    done
}

# The pinned wasm-bindgen of edge/Cargo.toml, which the CLI must match.
stasis_wasm_bindgen_version() {
    sed -n 's/^wasm-bindgen = "=\(.*\)"/\1/p' "$STASIS_ROOT/edge/Cargo.toml"
}

# Tools for the edge worker; reuses what is installed when the version fits.
stasis_edge_tools() {
    local wbg worker_build="0.8.7"
    wbg="$(stasis_wasm_bindgen_version)"
    if [ "$(wasm-bindgen --version 2>/dev/null)" != "wasm-bindgen $wbg" ]; then
        # No --locked: its lockfile pins a crate the registry no longer has.
        cargo install wasm-bindgen-cli --version "$wbg" --force
    fi
    if [ "$(worker-build --version 2>/dev/null | awk '{print $NF}')" != "$worker_build" ]; then
        cargo install worker-build --version "$worker_build" --locked --force
    fi
    stasis_npm_packages "$STASIS_ROOT/node_modules/.bin/wrangler"
}

# cargo-deny, which checks the three lockfiles' licenses, bans and sources
# against deny.toml; reused when the installed version fits.
stasis_cargo_deny() {
    local version="0.20.2"
    if [ "$(cargo deny --version 2>/dev/null | awk '{print $NF}')" != "$version" ]; then
        cargo install cargo-deny --version "$version" --locked --force
    fi
}

# npm ci when node_modules was not installed from this very lockfile, or
# lacks the executable $1. No package runs install scripts: the Kilo CLI's
# platform package is a plain binary, and the edge tools run without theirs.
stasis_npm_packages() {
    local needed="$1" stamp="$STASIS_ROOT/node_modules/.stasis-lock"
    if [ ! -x "$needed" ] || ! cmp -s "$STASIS_ROOT/package-lock.json" "$stamp"; then
        (cd "$STASIS_ROOT" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
        cp "$STASIS_ROOT/package-lock.json" "$stamp"
    fi
}

# The Kilo CLI (`kilo serve`) the real-agent tests drive, from the lockfile;
# exports STASIS_KILO_BIN, where the kilo harness looks first.
stasis_kilo() {
    STASIS_KILO_BIN="$STASIS_ROOT/node_modules/@kilocode/cli-linux-x64/bin/kilo"
    stasis_npm_packages "$STASIS_KILO_BIN"
    export STASIS_KILO_BIN
}

# Chromium and its WebDriver from the distribution's packages, for the
# operator page's browser test (host/tests/operator_page); installed with
# apt-get when either is missing. Browsers that tools download from a vendor
# site are not used.
stasis_chromium() {
    if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
        return 0
    fi
    if ! command -v apt-get >/dev/null 2>&1; then
        echo "chromium and chromedriver are required (Debian: apt-get install chromium chromium-driver)" >&2
        exit 1
    fi
    local sudo=()
    if [ "$(id -u)" -ne 0 ]; then sudo=(sudo); fi
    "${sudo[@]}" apt-get update -qq
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -qq --no-install-recommends chromium chromium-driver >/dev/null
}

# The Durable Streams peer the bench measures against (bench/peer), from its
# lockfile: npm ci without install scripts (its native parts come prebuilt in
# platform packages), done again only when the lockfile changed since.
stasis_bench_peer() {
    local dir="$STASIS_ROOT/bench/peer"
    local stamp="$dir/node_modules/.stasis-lock"
    if [ ! -d "$dir/node_modules/@durable-streams/server" ] ||
        ! cmp -s "$dir/package-lock.json" "$stamp"; then
        (cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
        cp "$dir/package-lock.json" "$stamp"
    fi
}

# A copy of wrangler.toml without [build], written beside it (paths in it
# are relative to its folder), for running a bundle that is already built:
# with [build], wrangler dev would build again at start. Each call writes a
# file of its own: a running wrangler watches its config, and dies when
# another run rewrites or removes it. The caller removes the file when done.
stasis_prebuilt_wrangler_config() {
    local config
    config="$(mktemp --suffix=.toml "$STASIS_ROOT/.wrangler-prebuilt.XXXXXXXX")"
    sed '/^\[build\]/,/^$/d' "$STASIS_ROOT/wrangler.toml" >"$config"
    echo "$config"
}

# The configs stasis_start_edge wrote in this shell; removed by
# stasis_remove_edge_configs once their wranglers are stopped.
STASIS_EDGE_CONFIGS=()
stasis_remove_edge_configs() {
    if [ "${#STASIS_EDGE_CONFIGS[@]}" -gt 0 ]; then rm -f "${STASIS_EDGE_CONFIGS[@]}"; fi
    STASIS_EDGE_CONFIGS=()
}

# Starts `wrangler dev --local` on loopback in its own process group.
# Usage: stasis_start_edge PORT PERSIST_DIR ENV_FILE LOG; sets EDGE_PID, which
# is also the process group id, and runs wrangler on a config of its own
# (see stasis_remove_edge_configs) (setsid runs in the backgrounded child itself,
# so `kill -- -$EDGE_PID` reaches wrangler and its workerd processes).
stasis_start_edge() {
    local port="$1" persist="$2" env_file="$3" log="$4" config
    config="$(stasis_prebuilt_wrangler_config)"
    STASIS_EDGE_CONFIGS+=("$config")
    WRANGLER_SEND_METRICS=false CI=true setsid \
        "$STASIS_ROOT/node_modules/.bin/wrangler" dev --cwd "$STASIS_ROOT" --config "$config" \
        --local --ip 127.0.0.1 --port "$port" --inspector-port "$(stasis_free_port)" \
        --persist-to "$persist" --env-file "$env_file" \
        --show-interactive-dev-session=false >"$log" 2>&1 &
    EDGE_PID=$!
}

# Stops a process group started with setsid.
stasis_stop_group() {
    local pid="$1"
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
    kill -KILL -- "-$pid" 2>/dev/null || true
}
