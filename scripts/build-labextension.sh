#!/usr/bin/env bash
# Build the JupyterLab extension (labextension/ -> agentik_jupyter/labextension/) with the
# venv's jupyter-builder and link the output where that venv's JupyterLab looks for it:
# <venv>/share/jupyter/labextensions/agentik-jupyter (what `labextension develop` does).
# Usage: scripts/build-labextension.sh [VENV]   (default: .venv)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=$(cd "${1:-$root/.venv}" && pwd)
export PATH="$venv/bin:$PATH"
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    echo "building the JupyterLab extension needs Node.js >= 20 and npm on PATH" >&2
    exit 1
fi
cd "$root/labextension"
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    npm ci --no-audit --no-fund --ignore-scripts
fi
rm -rf lib "$root/agentik_jupyter/labextension"
npm run --silent build
target="$venv/share/jupyter/labextensions/agentik-jupyter"
mkdir -p "$(dirname "$target")"
rm -rf "$target"  # a copy a pip install left, or an older link
ln -s "$root/agentik_jupyter/labextension" "$target"
echo "agentik-jupyter: built and linked at $target"
