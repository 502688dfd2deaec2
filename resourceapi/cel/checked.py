"""The checked CEL AST (`cel.expr.CheckedExpr`) as Python protobuf messages.

cel-expr-python hands out a checked expression only as bytes (`Expression.serialize()`); these runtime-built
descriptors (a subset of cel-spec's syntax.proto and checked.proto, same field numbers) let the cost estimate
and our own type checks read it, and let the evaluation rewrite it before `Env.deserialize`.
"""

from __future__ import annotations

from typing import Any

from google.protobuf import any_pb2, descriptor_pb2, descriptor_pool, message_factory

_F = descriptor_pb2.FieldDescriptorProto
_OPT = _F.LABEL_OPTIONAL
_REP = _F.LABEL_REPEATED

# (name, number, type, label, type_name, oneof index or None)
_FieldSpec = tuple[str, int, int, int, str, int | None]


def _message(
    parent: Any, name: str, fields: list[_FieldSpec], oneofs: tuple[str, ...] = (), map_entry: bool = False
) -> Any:
    msg = parent.add(name=name)
    for oneof in oneofs:
        msg.oneof_decl.add(name=oneof)
    for fname, number, ftype, label, type_name, oneof_index in fields:
        f = msg.field.add(name=fname, number=number, type=ftype, label=label)
        if type_name:
            f.type_name = type_name
        if oneof_index is not None:
            f.oneof_index = oneof_index
    if map_entry:
        msg.options.map_entry = True
    return msg


def _build_pool() -> descriptor_pool.DescriptorPool:
    fd = descriptor_pb2.FileDescriptorProto(
        name="dra_capacity/cel_expr.proto", package="cel.expr", syntax="proto3"
    )
    msgs = fd.message_type
    s, i64, i32, u64, dbl, b, byt, m, e = (
        _F.TYPE_STRING,
        _F.TYPE_INT64,
        _F.TYPE_INT32,
        _F.TYPE_UINT64,
        _F.TYPE_DOUBLE,
        _F.TYPE_BOOL,
        _F.TYPE_BYTES,
        _F.TYPE_MESSAGE,
        _F.TYPE_ENUM,
    )
    _message(
        msgs,
        "Constant",
        [
            ("null_value", 1, i32, _OPT, "", 0),
            ("bool_value", 2, b, _OPT, "", 0),
            ("int64_value", 3, i64, _OPT, "", 0),
            ("uint64_value", 4, u64, _OPT, "", 0),
            ("double_value", 5, dbl, _OPT, "", 0),
            ("string_value", 6, s, _OPT, "", 0),
            ("bytes_value", 7, byt, _OPT, "", 0),
        ],
        oneofs=("constant_kind",),
    )
    expr = _message(
        msgs,
        "Expr",
        [
            ("id", 2, i64, _OPT, "", None),
            ("const_expr", 3, m, _OPT, ".cel.expr.Constant", 0),
            ("ident_expr", 4, m, _OPT, ".cel.expr.Expr.Ident", 0),
            ("select_expr", 5, m, _OPT, ".cel.expr.Expr.Select", 0),
            ("call_expr", 6, m, _OPT, ".cel.expr.Expr.Call", 0),
            ("list_expr", 7, m, _OPT, ".cel.expr.Expr.CreateList", 0),
            ("struct_expr", 8, m, _OPT, ".cel.expr.Expr.CreateStruct", 0),
            ("comprehension_expr", 9, m, _OPT, ".cel.expr.Expr.Comprehension", 0),
        ],
        oneofs=("expr_kind",),
    )
    nested = expr.nested_type
    _message(nested, "Ident", [("name", 1, s, _OPT, "", None)])
    _message(
        nested,
        "Select",
        [
            ("operand", 1, m, _OPT, ".cel.expr.Expr", None),
            ("field", 2, s, _OPT, "", None),
            ("test_only", 3, b, _OPT, "", None),
        ],
    )
    _message(
        nested,
        "Call",
        [
            ("target", 1, m, _OPT, ".cel.expr.Expr", None),
            ("function", 2, s, _OPT, "", None),
            ("args", 3, m, _REP, ".cel.expr.Expr", None),
        ],
    )
    _message(
        nested,
        "CreateList",
        [("elements", 1, m, _REP, ".cel.expr.Expr", None), ("optional_indices", 2, i32, _REP, "", None)],
    )
    cs = _message(
        nested,
        "CreateStruct",
        [
            ("message_name", 1, s, _OPT, "", None),
            ("entries", 2, m, _REP, ".cel.expr.Expr.CreateStruct.Entry", None),
        ],
    )
    _message(
        cs.nested_type,
        "Entry",
        [
            ("id", 1, i64, _OPT, "", None),
            ("field_key", 2, s, _OPT, "", 0),
            ("map_key", 3, m, _OPT, ".cel.expr.Expr", 0),
            ("value", 4, m, _OPT, ".cel.expr.Expr", None),
            ("optional_entry", 5, b, _OPT, "", None),
        ],
        oneofs=("key_kind",),
    )
    _message(
        nested,
        "Comprehension",
        [
            ("iter_var", 1, s, _OPT, "", None),
            ("iter_range", 2, m, _OPT, ".cel.expr.Expr", None),
            ("accu_var", 3, s, _OPT, "", None),
            ("accu_init", 4, m, _OPT, ".cel.expr.Expr", None),
            ("loop_condition", 5, m, _OPT, ".cel.expr.Expr", None),
            ("loop_step", 6, m, _OPT, ".cel.expr.Expr", None),
            ("result", 7, m, _OPT, ".cel.expr.Expr", None),
            ("iter_var2", 8, s, _OPT, "", None),
        ],
    )
    typ = _message(
        msgs,
        "Type",
        [
            ("dyn", 1, m, _OPT, ".cel.expr.Type.Empty", 0),
            ("null", 2, i32, _OPT, "", 0),
            ("primitive", 3, i32, _OPT, "", 0),
            ("wrapper", 4, i32, _OPT, "", 0),
            ("well_known", 5, i32, _OPT, "", 0),
            ("list_type", 6, m, _OPT, ".cel.expr.Type.ListType", 0),
            ("map_type", 7, m, _OPT, ".cel.expr.Type.MapType", 0),
            ("function", 8, m, _OPT, ".cel.expr.Type.FunctionType", 0),
            ("message_type", 9, s, _OPT, "", 0),
            ("type_param", 10, s, _OPT, "", 0),
            ("type", 11, m, _OPT, ".cel.expr.Type", 0),
            ("error", 12, m, _OPT, ".cel.expr.Type.Empty", 0),
            ("abstract_type", 14, m, _OPT, ".cel.expr.Type.AbstractType", 0),
        ],
        oneofs=("type_kind",),
    )
    tn = typ.nested_type
    _message(tn, "Empty", [])
    _message(tn, "ListType", [("elem_type", 1, m, _OPT, ".cel.expr.Type", None)])
    _message(
        tn,
        "MapType",
        [
            ("key_type", 1, m, _OPT, ".cel.expr.Type", None),
            ("value_type", 2, m, _OPT, ".cel.expr.Type", None),
        ],
    )
    _message(
        tn,
        "FunctionType",
        [
            ("result_type", 1, m, _OPT, ".cel.expr.Type", None),
            ("arg_types", 2, m, _REP, ".cel.expr.Type", None),
        ],
    )
    _message(
        tn,
        "AbstractType",
        [("name", 1, s, _OPT, "", None), ("parameter_types", 2, m, _REP, ".cel.expr.Type", None)],
    )
    _message(
        msgs,
        "Reference",
        [
            ("name", 1, s, _OPT, "", None),
            ("overload_id", 3, s, _REP, "", None),
            ("value", 4, m, _OPT, ".cel.expr.Constant", None),
        ],
    )
    si = _message(
        msgs,
        "SourceInfo",
        [
            ("syntax_version", 1, s, _OPT, "", None),
            ("location", 2, s, _OPT, "", None),
            ("line_offsets", 3, i32, _REP, "", None),
            ("positions", 4, m, _REP, ".cel.expr.SourceInfo.PositionsEntry", None),
            ("macro_calls", 5, m, _REP, ".cel.expr.SourceInfo.MacroCallsEntry", None),
        ],
    )
    _message(
        si.nested_type,
        "PositionsEntry",
        [("key", 1, i64, _OPT, "", None), ("value", 2, i32, _OPT, "", None)],
        map_entry=True,
    )
    _message(
        si.nested_type,
        "MacroCallsEntry",
        [("key", 1, i64, _OPT, "", None), ("value", 2, m, _OPT, ".cel.expr.Expr", None)],
        map_entry=True,
    )
    ce = _message(
        msgs,
        "CheckedExpr",
        [
            ("reference_map", 2, m, _REP, ".cel.expr.CheckedExpr.ReferenceMapEntry", None),
            ("type_map", 3, m, _REP, ".cel.expr.CheckedExpr.TypeMapEntry", None),
            ("expr", 4, m, _OPT, ".cel.expr.Expr", None),
            ("source_info", 5, m, _OPT, ".cel.expr.SourceInfo", None),
            ("expr_version", 6, s, _OPT, "", None),
        ],
    )
    _message(
        msgs,
        "ParsedExpr",
        [
            ("expr", 2, m, _OPT, ".cel.expr.Expr", None),
            ("source_info", 3, m, _OPT, ".cel.expr.SourceInfo", None),
        ],
    )
    _message(
        ce.nested_type,
        "ReferenceMapEntry",
        [("key", 1, i64, _OPT, "", None), ("value", 2, m, _OPT, ".cel.expr.Reference", None)],
        map_entry=True,
    )
    _message(
        ce.nested_type,
        "TypeMapEntry",
        [("key", 1, i64, _OPT, "", None), ("value", 2, m, _OPT, ".cel.expr.Type", None)],
        map_entry=True,
    )
    del e  # enums are read as plain int32 fields
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    return pool


_POOL = _build_pool()
CheckedExpr: Any = message_factory.GetMessageClass(_POOL.FindMessageTypeByName("cel.expr.CheckedExpr"))
Expr: Any = message_factory.GetMessageClass(_POOL.FindMessageTypeByName("cel.expr.Expr"))
CelType: Any = message_factory.GetMessageClass(_POOL.FindMessageTypeByName("cel.expr.Type"))
ParsedExpr: Any = message_factory.GetMessageClass(_POOL.FindMessageTypeByName("cel.expr.ParsedExpr"))

# cel.expr.Type.PrimitiveType values.
PRIMITIVE_NAMES = {1: "bool", 2: "int", 3: "uint", 4: "double", 5: "string", 6: "bytes"}


_TYPE_URL = "type.googleapis.com/cel.expr.CheckedExpr"


def parse_checked(data: bytes) -> Any:
    """Decode `Expression.serialize()` output (an Any holding a CheckedExpr) into a `CheckedExpr` message."""
    wrapper = any_pb2.Any()
    wrapper.ParseFromString(data)
    checked = CheckedExpr()
    checked.ParseFromString(wrapper.value)
    return checked


def parse_parsed(data: bytes) -> Any:
    """Decode the `serialize()` output of an unchecked expression (`compile(..., disable_check=True)`)."""
    wrapper = any_pb2.Any()
    wrapper.ParseFromString(data)
    parsed = ParsedExpr()
    parsed.ParseFromString(wrapper.value)
    return parsed


def serialize_checked(checked: Any) -> bytes:
    """The inverse of `parse_checked`, in the form `Env.deserialize` reads."""
    return bytes(any_pb2.Any(type_url=_TYPE_URL, value=checked.SerializeToString()).SerializeToString())


def type_name(t: Any) -> str:
    """A checked type as cel-go prints it: `int`, `list(string)`, `map(string, dyn)`, `kubernetes.Semver`."""
    kind = t.WhichOneof("type_kind")
    if kind == "primitive":
        return PRIMITIVE_NAMES.get(t.primitive, "dyn")
    if kind == "wrapper":
        return "wrapper(" + PRIMITIVE_NAMES.get(t.wrapper, "dyn") + ")"
    if kind == "well_known":
        return {1: "any", 2: "google.protobuf.Timestamp", 3: "google.protobuf.Duration"}.get(
            t.well_known, "dyn"
        )
    if kind == "list_type":
        return f"list({type_name(t.list_type.elem_type)})"
    if kind == "map_type":
        return f"map({type_name(t.map_type.key_type)}, {type_name(t.map_type.value_type)})"
    if kind == "message_type":
        return str(t.message_type)
    if kind == "type_param":
        return str(t.type_param)
    if kind == "type":
        return f"type({type_name(t.type)})"
    if kind == "null":
        return "null_type"
    if kind == "error":
        return "*error*"
    if kind == "abstract_type":
        params = ", ".join(type_name(p) for p in t.abstract_type.parameter_types)
        return f"{t.abstract_type.name}({params})" if params else str(t.abstract_type.name)
    if kind == "function":
        return "function"
    return "dyn"
