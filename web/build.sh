#!/usr/bin/env bash
# Builds the dpq playground into web/dist/: dpq compiled to WebAssembly, its bindings, the page,
# and the bundled examples and data under the paths they have in the repository. Serve
# web/dist with any static server: python3 -m http.server -d web/dist 8000
#
# Needs the wasm32 target (rustup target add wasm32-unknown-unknown) and wasm-bindgen-cli at
# the version of the wasm-bindgen crate in Cargo.lock (cargo install wasm-bindgen-cli
# --version X); both are installed when missing.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
    rustup target add wasm32-unknown-unknown
fi
version="$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)"
if [ "$(wasm-bindgen --version 2>/dev/null | awk '{print $2}')" != "$version" ]; then
    cargo install wasm-bindgen-cli --version "$version"
fi

target="${CARGO_TARGET_DIR:-target}"
cargo rustc --locked --lib --release --no-default-features --target wasm32-unknown-unknown \
    --crate-type cdylib
rm -rf web/dist
mkdir -p web/dist/pkg
wasm-bindgen --target web --no-typescript --out-dir web/dist/pkg \
    "$target/wasm32-unknown-unknown/release/dpq.wasm"
cp web/index.html web/app.js web/worker.js web/style.css web/dist/
mkdir -p web/dist/examples/data web/dist/examples/figures web/dist/examples/attack web/dist/examples/slides
cp examples/*.dpq web/dist/examples/
cp examples/data/*.csv web/dist/examples/data/
cp examples/figures/*.dpq web/dist/examples/figures/
cp examples/attack/*.dpq examples/attack/*.csv web/dist/examples/attack/
cp examples/slides/*.dpq web/dist/examples/slides/
echo "web/dist is ready: python3 -m http.server -d web/dist 8000, then http://127.0.0.1:8000/"
