"""The machine as the real node found it: a run that dies (every process SIGKILLed, nothing cleaned) leaves a
shim, the pod's processes, mounts, a network namespace and the kubelet's sysctls; the next start restores the
saved sysctls, removes all of it by PID and path, and runs. The teardown then asserts nothing is left."""

from __future__ import annotations

import signal
from pathlib import Path

from support.waiting import wait_for

from localcluster.objects import make_pod
from localcluster.realnode import host
from localcluster.realnode.node import RealNode, workload_image

from .conftest import NodeFactory, Product
from .test_headline import running_by_kubelet

# What the kubelet sets with protectKernelDefaults: false (pkg/kubelet/cm/container_manager_linux.go).
KUBELET_SYSCTLS = {"vm.overcommit_memory": "1", "kernel.panic": "10", "kernel.panic_on_oops": "1"}


def test_a_crashed_run_is_cleaned_and_its_sysctls_restored_at_the_next_start(
    node_cluster: Product, start_node: NodeFactory, tmp_path: Path
) -> None:
    cluster = node_cluster.cluster
    original = host.read_sysctls()
    crashed = RealNode.launch(cluster, tmp_path / "crashed", None, "pytest, the run that crashes")
    assert host.read_sysctls() == KUBELET_SYSCTLS
    pod = (
        make_pod("survivor").namespace("default").container("main", workload_image()).node(crashed.name).obj()
    )
    pod["spec"]["containers"][0]["imagePullPolicy"] = "Never"
    pod["spec"]["terminationGracePeriodSeconds"] = 1
    cluster.create(pod)
    path = "/api/v1/namespaces/default/pods/survivor"
    wait_for("the pod Running", lambda: running_by_kubelet(cluster.request("GET", path)[1]), 60, 0.3)

    # The run dies: SIGKILL, no teardown; its lock goes as a dead process's does.
    for name in list(crashed.procs):
        crashed._stop_proc(name, signal.SIGKILL)
    crashed._lock.close()
    left = host.leftovers(crashed.binary_paths(), original)
    counts = {k: len(v) for k, v in left.__dict__.items()}
    print(f"a crashed run left (counts): {counts}")
    assert left.processes and left.mounts and left.netns and left.links and left.sysctls
    assert host.SAVED_SYSCTLS.is_file()

    node = (
        start_node()
    )  # restores the sysctls, cleans, starts; the fixture's teardown asserts nothing is left
    assert node.sysctls_before == original
    assert host.read_sysctls() == KUBELET_SYSCTLS
    # The new kubelet runs the pod bound to its node afresh.
    wait_for("the pod Running again", lambda: running_by_kubelet(cluster.request("GET", path)[1]), 60, 0.3)
