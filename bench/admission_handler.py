"""Handler-only cost of DeviceClass admission on the realistic fixture (no HTTP), as figures and ratios.

    .venv/bin/python bench/admission_handler.py [--seconds 2]

Prints microseconds per call of `/validate` and `/mutate` logic against an allow-all handler, the JSON decode
of the fixture for scale, and the cost of compiling a never-seen selector (a CEL cache miss; target <= 1 ms).
The server benchmark measures throughput end to end; this one shows what the admission logic adds to it.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from resourceapi.cel import compile_selector
from resourceapi.gates import FeatureGates
from webhook.deviceclass.admission import DeviceClassAdmission

FIXTURE = Path(__file__).parent / "fixtures" / "deviceclass-realistic.json"


def per_call(fn: Callable[[], Any], seconds: float) -> float:
    """Mean seconds per call over about `seconds` of repeated calls (after a short warm-up)."""
    for _ in range(100):
        fn()
    n, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        for _ in range(200):
            fn()
        n += 200
    return elapsed / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="measuring time per figure")
    args = parser.parse_args()
    body = FIXTURE.read_text()
    request = json.loads(body)["request"]
    admission = DeviceClassAdmission(FeatureGates.defaults())
    admission.warm_up()
    assert admission.validate(request).response["allowed"], "the fixture must be allowed"

    def allow_all() -> dict[str, Any]:
        return {"uid": request["uid"], "allowed": True}

    base = per_call(allow_all, args.seconds)
    validate = per_call(lambda: admission.validate(request), args.seconds)
    mutate = per_call(lambda: admission.mutate(request), args.seconds)
    decode = per_call(lambda: json.loads(body), args.seconds)
    counter = iter(range(10**9))
    gates = FeatureGates.defaults()
    miss = per_call(
        lambda: compile_selector(
            f'device.driver == "d{next(counter)}.example.com" && '
            'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0',
            gates,
        ),
        args.seconds,
    )
    print(f"allow-all handler        {base * 1e6:9.1f} us/call")
    print(f"validate (realistic)     {validate * 1e6:9.1f} us/call")
    print(f"mutate (realistic)       {mutate * 1e6:9.1f} us/call")
    print(
        f"json.loads(review)       {decode * 1e6:9.1f} us/call   (for scale: the server decodes every body)"
    )
    print(f"CEL compile, cache miss  {miss * 1e3:9.3f} ms/call   (target <= 1 ms)")
    print(f"validate / json.loads    {validate / decode:9.2f} x")


if __name__ == "__main__":
    main()
