"""The Dockerfile's build stage in one step (one RUN, one layer: vfs storage copies the whole root filesystem
for every step, so fewer steps build and clean up much faster).

Standard library only; runs with the base image's python3:
1. build wheels of the project and its pinned dependencies into /wheels (pip honours PIP_NO_INDEX and
   --find-links /src/build/wheelhouse, so a prefetched wheelhouse needs no registry);
2. install them, from /wheels only, into a fresh virtualenv at /opt/dra-capacity (no pip inside it);
3. leave out the official client's unused asyncio copy (kubernetes/aio; tests/image checks nothing imports
   it) and byte-compile once, since the root filesystem is read-only at run time.
"""

import shutil
import subprocess
import sys

VENV = "/opt/dra-capacity"
TOOLS = "/opt/build"


def run(*args: str) -> None:
    print("+", " ".join(args), flush=True)
    subprocess.run(args, check=True)


def main() -> int:
    run(sys.executable, "-m", "venv", TOOLS)
    pip = f"{TOOLS}/bin/pip"
    run(pip, "wheel", "--quiet", "--wheel-dir", "/wheels", "--find-links", "/src/build/wheelhouse", "/src")
    run(sys.executable, "-m", "venv", "--without-pip", VENV)
    run(
        pip,
        "--python",
        f"{VENV}/bin/python",
        "install",
        "--quiet",
        "--no-index",
        "--find-links",
        "/wheels",
        "--no-compile",
        "dra-capacity",
    )
    purelib = subprocess.run(
        [f"{VENV}/bin/python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    shutil.rmtree(f"{purelib}/kubernetes/aio")
    run(f"{VENV}/bin/python", "-m", "compileall", "-q", f"{VENV}/lib")
    return 0


if __name__ == "__main__":
    sys.exit(main())
