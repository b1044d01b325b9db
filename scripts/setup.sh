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
