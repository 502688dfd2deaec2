"""A ResourceSlice whose capacity's `validRange.step` is 0, on the real API server of the selected release:
v1.36.3 divides by it (`validateRequestPolicyRangeStep`, pkg/apis/resource/validation/validation.go:1188) and
its handler panics, so the connection is dropped and nothing is stored; 1.37 and 1.38 refuse it with `must be
greater than zero`, as dra-capacity does on every release (docs/divergences.md, 1.36)."""

from __future__ import annotations

from differential.compare import DROPPED, compare
from differential.server import Server
from dra_capacity.apiverdict import Judge
from localcluster.cluster import Cluster, selected_release
from localcluster.objects import make_slice
from resourceapi.gates import FeatureGates

GREATER = "must be greater than zero"
STEP = "spec.devices[0].capacity[mem].requestPolicy.validRange.step"


def _slice() -> dict[str, object]:
    device = {
        "name": "d",
        "allowMultipleAllocations": True,
        "capacity": {
            "mem": {"value": "10", "requestPolicy": {"default": "2", "validRange": {"min": "1", "step": "0"}}}
        },
    }
    return make_slice("n1").devices(device).obj()


def test_a_zero_step_is_refused_and_1_36_drops_it(real_cluster: Cluster) -> None:
    release = selected_release()
    api = real_cluster.api_client()
    try:
        theirs = Server(api.configuration, workers=1).dry_run(_slice())
    finally:
        api.close()
    ours = Judge(FeatureGates.parse("", release)).judge(_slice())
    assert [(c.field, c.message) for c in ours.causes] == [
        (STEP, 'Invalid value: "0": must be greater than zero')
    ]
    if release == "1.36":
        assert theirs.code == DROPPED, theirs
        [key] = [d.key for d in compare("ResourceSlice", ours, theirs).disagreements]
        assert key == "ResourceSlice|server-dropped|-|ours-refused"
    else:
        assert compare("ResourceSlice", ours, theirs).disagreements == [], theirs
