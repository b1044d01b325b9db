# Every task of the repository, one line each; `make help` lists them.
# Each target runs the script or cargo command the README names, so the
# scripts stay the one place that installs what a task needs.
.PHONY: help serve test ci bench bench-smoke soak edge fmt fmt-check lint deny demo real-agent-demo

help: ## list the tasks
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F ':.*## ' '{printf "  make %-16s %s\n", $$1, $$2}'

serve: ## the local host on 127.0.0.1:8787, data in ./stasis-data
	scripts/serve

test: ## every test (what CI runs)
	bash scripts/test

ci: ## CI's entry point on this checkout
	bash .ci/run

bench: ## the benchmarks, recorded in BENCHMARKS.md
	scripts/bench

bench-smoke: ## a few seconds of every workload, nothing recorded
	scripts/bench-smoke

soak: ## a 10-minute realistic mix against one host
	scripts/soak

edge: ## the edge worker's bundle in edge/build (offline)
	scripts/build-edge

fmt: ## format all three workspaces
	cargo fmt --all
	cd components && cargo fmt --all
	cd edge && cargo fmt --all

fmt-check: ## check formatting without changing files
	cargo fmt --all -- --check
	cd components && cargo fmt --all -- --check
	cd edge && cargo fmt --all -- --check

lint: ## clippy, warnings denied, in all three workspaces
	cargo clippy --workspace --all-targets --locked -- -D warnings
	cd components && cargo clippy --target wasm32-wasip2 --all-targets --locked -- -D warnings
	cd edge && cargo clippy --target wasm32-unknown-unknown --all-targets --locked -- -D warnings

deny: ## licenses, bans and sources of the three lockfiles
	bash -c 'source scripts/setup.sh && stasis_cargo_deny'
	cargo deny --config deny.toml check bans licenses sources
	cd components && cargo deny --config ../deny.toml check bans licenses sources
	cd edge && cargo deny --config ../deny.toml check bans licenses sources

demo: ## the spec's eviction-and-recovery scenario against a fresh local host
	cargo run --release -p stasis-demo

real-agent-demo: ## the same story with the real Kilo CLI
	cargo build -p stasis-host -p stasis-client -p stasis-kilo-harness
	bash -c 'source scripts/setup.sh && stasis_kilo && target/debug/real-agent-demo'
