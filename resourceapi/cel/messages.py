"""The CEL object types of the DRA environment, as a runtime-built protobuf file (package `kubernetes`).

cel-expr-python type-checks against protobuf messages, so `kubernetes.Quantity`, `kubernetes.Semver` and
`kubernetes.DRADevice` are messages here. Quantity and Semver carry one `value` string holding a canonical
identity of the value (equal values, equal strings), which makes CEL's native `==` the semantic equality
upstream defines. A proto map cannot hold a map, so `attributes` and `capacity` are `map<string, Struct>`:
the checker sees the inner values as `dyn` (see checks.py for the checks that close that gap).
"""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, struct_pb2

QUANTITY_TYPE = "kubernetes.Quantity"
SEMVER_TYPE = "kubernetes.Semver"
DEVICE_TYPE = "kubernetes.DRADevice"
URL_TYPE = "kubernetes.URL"
FORMAT_TYPE = "kubernetes.NamedFormat"
IP_TYPE = "net.IP"
CIDR_TYPE = "net.CIDR"

_F = descriptor_pb2.FieldDescriptorProto


def _file(with_allow_multiple: bool) -> descriptor_pb2.FileDescriptorProto:
    fd = descriptor_pb2.FileDescriptorProto(
        name="dra_capacity/kubernetes_dra.proto", package="kubernetes", syntax="proto3"
    )
    fd.dependency.append("google/protobuf/struct.proto")
    for name in ("Quantity", "Semver", "URL", "NamedFormat"):
        msg = fd.message_type.add(name=name)
        msg.field.add(name="value", number=1, type=_F.TYPE_STRING, label=_F.LABEL_OPTIONAL)
    dev = fd.message_type.add(name="DRADevice")
    dev.field.add(name="driver", number=1, type=_F.TYPE_STRING, label=_F.LABEL_OPTIONAL)
    for number, name in ((3, "attributes"), (4, "capacity")):
        entry = dev.nested_type.add(name=name.capitalize() + "Entry")
        entry.options.map_entry = True
        entry.field.add(name="key", number=1, type=_F.TYPE_STRING, label=_F.LABEL_OPTIONAL)
        entry.field.add(
            name="value",
            number=2,
            type=_F.TYPE_MESSAGE,
            label=_F.LABEL_OPTIONAL,
            type_name=".google.protobuf.Struct",
        )
        dev.field.add(
            name=name,
            number=number,
            type=_F.TYPE_MESSAGE,
            label=_F.LABEL_REPEATED,
            type_name=f".kubernetes.DRADevice.{entry.name}",
        )
    if with_allow_multiple:
        dev.field.add(name="allowMultipleAllocations", number=2, type=_F.TYPE_BOOL, label=_F.LABEL_OPTIONAL)
    return fd


def _net_file() -> descriptor_pb2.FileDescriptorProto:
    """`net.IP` and `net.CIDR` (apiserver `pkg/cel/ip.go`, `cidr.go`): opaque values named as upstream."""
    fd = descriptor_pb2.FileDescriptorProto(name="dra_capacity/net.proto", package="net", syntax="proto3")
    for name in ("IP", "CIDR"):
        msg = fd.message_type.add(name=name)
        msg.field.add(name="value", number=1, type=_F.TYPE_STRING, label=_F.LABEL_OPTIONAL)
    return fd


def _pool(with_allow_multiple: bool) -> descriptor_pool.DescriptorPool:
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(struct_pb2.DESCRIPTOR.serialized_pb)
    pool.Add(_file(with_allow_multiple))
    pool.Add(_net_file())
    return pool


# The 1.34+ device type (with allowMultipleAllocations) and the 1.31 one (without): same message names,
# separate pools, so an environment sees exactly one DRADevice.
POOL_V134 = _pool(with_allow_multiple=True)
POOL_V131 = _pool(with_allow_multiple=False)

QuantityMessage: Any = message_factory.GetMessageClass(POOL_V134.FindMessageTypeByName(QUANTITY_TYPE))
SemverMessage: Any = message_factory.GetMessageClass(POOL_V134.FindMessageTypeByName(SEMVER_TYPE))


def pool_for(allow_multiple_allocations: bool) -> descriptor_pool.DescriptorPool:
    """The descriptor pool whose DRADevice has (or lacks) `allowMultipleAllocations`."""
    return POOL_V134 if allow_multiple_allocations else POOL_V131
