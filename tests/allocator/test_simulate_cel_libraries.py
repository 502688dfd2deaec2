"""`dra-capacity simulate` with the selectors NIC drivers publish: IP, CIDR, format, URL, regex, lists, sets
and two-variable comprehensions, on devices that carry such attributes (the selectors of issue 8's table)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from dra_capacity.cli import main
from localcluster.objects import make_slice

NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}


def _nic(name: str, ipv4: str, if_name: str, product: str, virtual: bool) -> dict[str, Any]:
    return {
        "name": name,
        "attributes": {
            "ipv4": {"string": ipv4},
            "ifName": {"string": if_name},
            "virtual": {"bool": virtual},
            "gpu.nvidia.com/productName": {"string": product},
        },
    }


SLICE = (
    make_slice("n1", "dra.net")
    .name("n1-nics")
    .devices(
        _nic("nic-0", "192.168.7.1", "eth0", "a10", True),
        _nic("nic-1", "10.0.3.4", "gpu0rdma0", "h100", False),
    )
    .obj()
)

# Each selects nic-1 only.
SELECTORS = [
    'cidr("10.0.0.0/16").containsIP(device.attributes["dra.net"].ipv4)',
    'isIP(device.attributes["dra.net"].ipv4) && ip(device.attributes["dra.net"].ipv4).family() == 4 && '
    '!ip(device.attributes["dra.net"].ipv4).isLinkLocalUnicast() && '
    'ip(device.attributes["dra.net"].ipv4) != ip("192.168.7.1")',
    '!format.dns1123Label().validate(device.attributes["dra.net"].ifName).hasValue() && '
    'device.attributes["dra.net"].ifName != "eth0"',
    'url("https://" + device.driver + "/" + device.attributes["dra.net"].ifName).getEscapedPath() '
    '== "/gpu0rdma0"',
    '["a100", "h100"].indexOf(device.attributes["gpu.nvidia.com"].productName) >= 0',
    'device.attributes["dra.net"].ifName.find("gpu[0-9]+rdma0") != ""',
    'sets.contains(["dra.net", "gpu.intel.com"], [device.driver]) && '
    'device.attributes["dra.net"].virtual == false',
    'device.attributes["dra.net"].all(k, v, k != "virtual" || v == false)',
    '[1, 2].sum() == 3 && device.attributes["dra.net"].ipv4.startsWith("10.")',
]


def _class(expression: str) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "nic"},
        "spec": {"selectors": [{"cel": {"expression": expression}}]},
    }


def _claim() -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "rdma", "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "nic", "exactly": {"deviceClassName": "nic"}}]}},
    }


def _simulate(tmp_path: Path, capsys: pytest.CaptureFixture[str], expression: str) -> dict[str, Any]:
    path = tmp_path / "input.yaml"
    path.write_text(yaml.safe_dump_all([NODE, SLICE, _class(expression), _claim()], sort_keys=False))
    assert main(["simulate", "-f", str(path)]) == 0
    doc: dict[str, Any] = json.loads(capsys.readouterr().out)
    return doc


@pytest.mark.parametrize("expression", SELECTORS)
def test_nic_selectors_pick_the_matching_device(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], expression: str
) -> None:
    doc = _simulate(tmp_path, capsys, expression)
    assert doc["result"] == "allocated", doc
    assert [r["device"] for r in doc["claims"][0]["allocation"]["devices"]["results"]] == ["nic-1"]


def test_a_library_runtime_error_is_the_selectors_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = _simulate(tmp_path, capsys, 'cidr(device.attributes["dra.net"].ipv4).prefixLength() > 0')
    assert doc["result"] == "error"
    assert doc["reason"] == (
        "class nic: selector #0 on device dra.net/n1/nic-0: CEL runtime error: network address parse error "
        "during conversion from string: network address parse error during conversion from string: "
        "netip.ParsePrefix(\"192.168.7.1\"): no '/'"
    )
