"""Post a DeviceClass AdmissionReview to the webhook through its Service, as the API server would.

Used by the chart's post-install probe Job and by `helm test`. A valid DeviceClass must be allowed and one
with a zero capacity request must be rejected with a 422; the CA comes from CA_FILE or CA_BUNDLE (base64).
Retries until PROBE_TIMEOUT seconds have passed, then exits 1 with one line saying what failed and what to
look at. Standard library only: it runs in the product image.
"""

import base64
import json
import os
import ssl
import sys
import time
import urllib.request

URL = os.environ["WEBHOOK_URL"]
TIMEOUT = float(os.environ.get("PROBE_TIMEOUT", "60"))
HINT = os.environ.get("HINT", "")


def review(name, requests):
    obj = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"extendedResourceCapacityRequests": {"requests": requests}},
    }
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "helm-probe-" + name,
            "kind": {"group": "resource.k8s.io", "version": "v1", "kind": "DeviceClass"},
            "resource": {"group": "resource.k8s.io", "version": "v1", "resource": "deviceclasses"},
            "name": name,
            "operation": "CREATE",
            "userInfo": {"username": "system:serviceaccount:helm-probe"},
            "object": obj,
            "oldObject": None,
            "dryRun": True,
        },
    }


def context():
    if os.environ.get("CA_BUNDLE"):
        return ssl.create_default_context(cadata=base64.b64decode(os.environ["CA_BUNDLE"]).decode())
    return ssl.create_default_context(cafile=os.environ.get("CA_FILE", "/probe-ca/ca.crt"))


def post(ctx, body):
    data = json.dumps(body).encode()
    req = urllib.request.Request(URL, data, {"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(req, context=ctx, timeout=10) as resp:
        return json.loads(resp.read())["response"]


def attempt():
    ctx = context()
    ok = post(ctx, review("dra-capacity-probe-ok", {"gpu.example.com/shares": "1"}))
    if ok.get("allowed") is not True:
        raise RuntimeError(f"a valid DeviceClass was rejected: {ok.get('status', {}).get('message')}")
    bad = post(ctx, review("dra-capacity-probe-bad", {"gpu.example.com/shares": "0"}))
    if bad.get("allowed") is not False or bad.get("status", {}).get("code") != 422:
        raise RuntimeError("a DeviceClass with a zero capacity request was not rejected with 422")
    return bad["status"].get("message", "")


def main():
    deadline = time.monotonic() + TIMEOUT
    last = ""
    while True:
        try:
            message = attempt()
        except Exception as exc:  # every failure is retried until the deadline, then reported
            last = f"{type(exc).__name__}: {exc}"
        else:
            print(f"dra-capacity webhook answers at {URL}: allowed a valid DeviceClass, rejected: {message}")
            return 0
        if time.monotonic() >= deadline:
            print(
                f"dra-capacity: the webhook at {URL} did not answer correctly within {TIMEOUT:.0f}s: "
                f"{last}. {HINT}",
                file=sys.stderr,
            )
            return 1
        time.sleep(2)


sys.exit(main())
