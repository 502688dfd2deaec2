"""Fixtures of the real-node tier (docs/testing.md, "The real node"): one real control plane with the product
installed (as `make run` installs it) for the whole directory, and a fresh real node per test (about 3 s),
whose teardown asserts that nothing is left on the machine and the host sysctls are back.

Every test here is marked `realnode` and `realcluster` (so `make quick` and the unit tier leave them out;
`make realcluster` runs `realcluster and not realnode`). Without root they skip, saying why.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Generator, Iterator
from pathlib import Path

import pytest
from support.real_cluster import Product as Product
from support.real_cluster import installed_product

from localcluster.cluster import ClusterConfig
from localcluster.install import opted_in_namespace, shared_gpu_class, wait_routed
from localcluster.realnode import host
from localcluster.realnode.node import APISERVER_ARGS, RealNode, RealNodeConfig, check_usable

HERE = Path(__file__).resolve().parent
_NODES: list[RealNode] = []


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if Path(str(item.fspath)).resolve().is_relative_to(HERE):
            item.add_marker(pytest.mark.realnode)
            item.add_marker(pytest.mark.realcluster)


@pytest.fixture(scope="session")
def node_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Product]:
    if os.geteuid() != 0:
        pytest.skip("the real-node tier needs root (a kubelet mounts, makes cgroups, changes sysctls)")
    check_usable()  # not built: fail, naming `make realnode-bins`
    workdir = tmp_path_factory.mktemp("realnode")
    with installed_product(workdir, ClusterConfig(apiserver_args=APISERVER_ARGS)) as product:
        product.cluster.create(shared_gpu_class())
        yield product


@pytest.fixture
def routed_namespace(node_cluster: Product) -> Iterator[str]:
    """A fresh namespace opted in to pod routing, deleted after the test."""
    name = f"rn-{uuid.uuid4().hex[:6]}"
    node_cluster.cluster.create(opted_in_namespace(name))
    wait_routed(node_cluster.cluster, name)
    yield name
    node_cluster.cluster.request("DELETE", f"/api/v1/namespaces/{name}")


NodeFactory = Callable[..., RealNode]


@pytest.fixture
def start_node(node_cluster: Product, tmp_path: Path) -> Iterator[NodeFactory]:
    """`start_node(RealNodeConfig(...))` launches a real node; each is stopped after the test, which fails if
    anything is left (processes, mounts, cgroups, namespaces, the bridge) or a sysctl differs."""
    started: list[RealNode] = []
    before = host.read_sysctls()

    def start(config: RealNodeConfig | None = None) -> RealNode:
        node = RealNode.launch(node_cluster.cluster, tmp_path / f"node-{len(started)}", config, "pytest")
        started.append(node)
        _NODES.append(node)
        print(f"\nrealnode: {node.name} Ready with its slice in {node.startup_seconds:.1f} s")
        return node

    yield start
    problems = []
    for node in started:
        _NODES.remove(node)
        left = node.stop()
        if not left.empty():
            problems.append(f"{node.name} left {left}")
    now = host.read_sysctls()
    if now != before:
        problems.append(f"sysctls not restored: before {before}, after {now}")
    assert not problems, "; ".join(problems)


@pytest.fixture
def real_node(start_node: NodeFactory) -> RealNode:
    return start_node()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.failed:
        for node in list(_NODES):
            report.sections.append((f"realnode logs ({node.workdir})", node.logs()))
    return report
