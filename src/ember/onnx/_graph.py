"""An ONNX graph as an Ember ``Module``: initializers as ``Param`` s, nodes through the op table, subgraphs.

Each node becomes a ``ember._graph_runner.Node`` whose function calls the op table's converter with the
node's attributes (``Attrs``) and input values. Subgraphs (``If``/``Loop``/``Scan`` bodies) and ONNX
functions (the model's local ones, and the standard library's function bodies for operators Ember has
no converter for) become nested runners; values of enclosing scopes are passed in explicitly.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from .._creation import as_tensor
from .._errors import DTypeError, EmberError, ShapeError
from .._graph_runner import GraphRunner, Node
from .._tensor import Tensor
from ..nn import Module, Param
from ._fuse import fuse
from ._ops import CONTROL, DOMAIN_OPS, OPS
from ._proto import OnnxFormatError, attribute_value, sparse_array, tensor_array

__all__ = ["Attrs", "OnnxModule", "Subgraph", "UnsupportedOperatorError", "newest_opset"]

MIN_OPSET = 1


class UnsupportedOperatorError(EmberError, NotImplementedError):
    """An ONNX operator (or operator set) Ember cannot run; the message names the node."""


def newest_opset() -> int:
    from onnx.defs import onnx_opset_version

    return int(onnx_opset_version())


class Attrs(dict):  # type: ignore[type-arg]
    """A node's attributes as Python values, with what converters need besides.

    ``opset`` is the model's version of the node's domain, ``n_out`` how many outputs the node names,
    ``device`` the device of the current run (for operators that create tensors from nothing).
    """

    def __init__(self, values: dict[str, Any], opset: int, n_out: int, name: str, op_type: str) -> None:
        super().__init__(values)
        self.opset, self.n_out, self.name, self.op_type = opset, n_out, name, op_type
        self.device: Any = None
        self.in_types: list[Any] = []


class Subgraph:
    """A nested graph ready to run: ``run(inputs, outer)`` with ``outer`` the enclosing scopes' values."""

    def __init__(self, runner: GraphRunner, inputs: list[str], captured: list[str], outputs: list[str]) -> None:
        self.runner, self.inputs, self.captured, self.outputs = runner, inputs, captured, outputs

    def run(self, inputs: Sequence[Any], outer: dict[str, Any], device: Any = None) -> list[Any]:
        return self.runner.run([*inputs, *(outer[n] for n in self.captured)], device)


def _safe(name: str) -> str:
    return re.sub(r"\W", "_", name) or "_"


def _tensor_of(arr: Any, where: str) -> Tensor:
    """An initializer or constant as a tensor on the default device (as a Module's parameters are made)."""
    try:
        return as_tensor(arr.copy() if not arr.flags.writeable else arr)
    except (TypeError, ValueError, EmberError) as e:
        raise UnsupportedOperatorError(f"{where}: dtype {arr.dtype} is not supported by Ember ({e})") from None


class _Builder:
    """Turns a ``ModelProto`` into runners, registering initializers on ``module``."""

    def __init__(self, module: OnnxModule, model: Any, label: str) -> None:
        self.module, self.label = module, label
        self.opsets = {(o.domain or ""): int(o.version) for o in model.opset_import}
        self.opsets.setdefault("ai.onnx", self.opsets.get("", 0))
        newest = newest_opset()
        default = self.opsets.get("", 0)
        if default and not MIN_OPSET <= default <= newest:
            raise UnsupportedOperatorError(f"{label}: opset {default} of the default domain is not supported (Ember "
                                           f"runs opsets {MIN_OPSET} to {newest}, the newest onnx knows)")  # fmt: skip
        self.functions = {(f.domain, f.name): f for f in model.functions}
        self.count = 0
        self.params: list[tuple[Module, str]] = []

    # -- values held by the module -----------------------------------------------------------------
    def hold(self, name: str, arr: Any, trainable: bool, persistent: bool = True) -> None:
        """Register ``arr`` on the module under ``name``'s dotted path (nested modules, PyTorch's keys)."""
        t = _tensor_of(arr, f"{self.label}: initializer {name!r}")
        param = Param(t, requires_grad=trainable and t.dtype.kind == "f", is_buffer=not trainable)
        owner: Module = self.module
        parts = [_safe(p) for p in name.split(".")]
        for part in parts[:-1]:
            child = owner._modules.get(part)
            if child is None and part not in owner._params and part not in owner.__dict__:
                child = Module()
                owner.register_module(part, child)
            if not isinstance(child, Module):
                parts = ["_".join(parts)]
                owner = self.module
                break
            owner = child
        key = parts[-1]
        while key in owner._params or key in owner._modules or key in owner.__dict__:
            key += "_"
        owner.register_parameter(key, param)
        if not persistent:
            owner._non_persistent.add(key)
        self.params.append((owner, key))

    # -- graphs ------------------------------------------------------------------------------------
    def graph(self, g: Any, outer: set[str], path: str, top: bool = False) -> tuple[Subgraph, list[str]]:
        """A runner for graph ``g``: (subgraph, the outer names it reads)."""
        inits = [t.name for t in g.initializer] + [s.values.name for s in g.sparse_initializer]
        init_set = set(inits)
        inputs = [i.name for i in g.input if i.name not in init_set]
        start = len(self.params)
        for t in g.initializer:
            self.hold(t.name if top else f"{path}.{t.name}", tensor_array(t, f"{self.label}: "), trainable=top)
        for sp in g.sparse_initializer:
            name = sp.values.name
            self.hold(name if top else f"{path}.{name}", sparse_array(sp, f"{self.label}: "), trainable=top)
        held = self.params[start:]
        local = set(inputs) | init_set
        for n in g.node:
            local.update(o for o in n.output if o)
        nodes = [self.node(n, outer | local, path) for n in g.node]
        captured: list[str] = []
        for node in nodes:
            for name in [*node.inputs, *node.meta.get("captured", [])]:
                if name and name not in local and name not in captured:
                    if name not in outer:
                        raise OnnxFormatError(f"{node.where}: operator {node.name!r} reads {name!r}, which is neither "
                                              "a graph input, an initializer nor an output of a node")  # fmt: skip
                    captured.append(name)
        for node in nodes:  # a node's subgraphs read outer names through the node's inputs
            extra = node.meta.get("captured", [])
            node.inputs = [*node.inputs, *extra]
        outputs = [o.name for o in g.output]
        nodes = fuse(nodes, outputs)
        runner = GraphRunner(nodes, [*inputs, *inits, *captured], outputs, error=OnnxFormatError,
                             where=f"{self.label}: graph {g.name!r}")  # fmt: skip
        sub = _HeldSubgraph(runner, inputs, captured, outputs, held)
        return sub, captured

    def node(self, n: Any, scope: set[str], path: str) -> Node:
        self.count += 1
        name = n.name or f"{n.op_type}_{self.count}"
        domain = "" if n.domain in ("", "ai.onnx") else n.domain
        where = f"{self.label}: node {name!r}"
        opset = self.opsets.get(domain)
        if opset is None:
            raise OnnxFormatError(f"{where}: operator {n.op_type!r} is in domain {domain!r}, which the model's "
                                  "opset_import does not declare")  # fmt: skip
        attrs: dict[str, Any] = {}
        captured: list[str] = []
        for a in n.attribute:
            if a.ref_attr_name:
                raise OnnxFormatError(f"{where}: attribute {a.name!r} refers to {a.ref_attr_name!r} outside a function")
            if a.type in (5, 10):  # GRAPH, GRAPHS
                graphs = [a.g] if a.type == 5 else list(a.graphs)
                subs = []
                for k, g in enumerate(graphs):
                    sub, reads = self.graph(g, scope, f"{_safe(name)}.{a.name}{k if a.type == 10 else ''}")
                    subs.append(sub)
                    captured += [r for r in reads if r not in captured]
                attrs[a.name] = subs[0] if a.type == 5 else subs
            else:
                attrs[a.name] = attribute_value(a, f"{where}: ")
        at = Attrs(attrs, opset, len(n.output), name, n.op_type)
        node = Node(n.op_type if not domain else f"{domain}:{n.op_type}", name, list(n.input), list(n.output),
                    where=where)  # fmt: skip
        node.meta["captured"] = captured
        node.meta["attrs"] = at
        local = self.functions.get((n.domain, n.op_type))
        if domain == "" and n.op_type == "Constant":
            node.fn = self.constant(at, where)
        elif local is not None:
            node.fn = self.function_call(local, at, n, path)
        elif domain == "" and n.op_type in CONTROL:
            node.fn = _control_call(CONTROL[n.op_type], at, len(n.input), captured)
        elif domain == "" and n.op_type in OPS:
            node.fn = _call(OPS[n.op_type], at)
        elif n.op_type in DOMAIN_OPS.get(domain, {}):
            node.fn = _call(DOMAIN_OPS[domain][n.op_type], at)
        else:
            node.fn = self.schema_function(n, at, domain, opset, path, where)
        return node

    def constant(self, at: Attrs, where: str) -> Callable[[list[Any], Any], Any]:
        """A ``Constant`` node: its value becomes a (non-persistent) buffer of the module, returned at each run."""
        import numpy as np

        kinds = {"value_float": np.float32, "value_floats": np.float32, "value_int": np.int64, "value_ints": np.int64}
        if "value" in at or "sparse_value" in at:
            arr = at.get("value", at.get("sparse_value"))
        elif kinds.keys() & at.keys():
            key = next(k for k in kinds if k in at)
            arr = np.asarray(at[key], dtype=kinds[key])
        else:
            raise UnsupportedOperatorError(f"{where}: Constant with {sorted(at)}: string tensors have no Ember dtype")
        self.hold(f"_constant_{len(self.params)}", arr, trainable=False, persistent=False)
        owner, key = self.params[-1]
        return lambda args, device: owner._params[key]

    # -- functions ----------------------------------------------------------------------------------
    def function_call(self, f: Any, at: Attrs, n: Any, path: str, schema: Any = None,
                      version: int = 0) -> Callable[[list[Any], Any], Any]:  # fmt: skip
        """Expand a call of an ONNX function: its body with the call's attributes substituted.

        For a standard-library function, ``schema`` gives the attribute defaults and ``version`` the opset
        its body is written in (when the body does not say).
        """
        defaults = {k: v.default_value for k, v in schema.attributes.items()} if schema is not None else {}
        body = _bind_attributes(f, n, defaults)
        saved = self.opsets
        own = {(o.domain or ""): int(o.version) for o in f.opset_import}
        if version and "" not in own:
            own[""] = version
        self.opsets = {**saved, **own}
        try:
            sub, _ = self.graph(body, set(), f"{path}.{_safe(at.name)}")
        finally:
            self.opsets = saved
        n_in = len(sub.inputs)
        named = [bool(o) for o in n.output]

        def call(args: list[Any], device: Any) -> Any:
            given = args[:n_in] + [None] * (n_in - len(args))
            it = iter(sub.run(given, {}, device))
            return _outputs([next(it) if k else None for k in named], at.n_out)

        return call

    def schema_function(self, n: Any, at: Attrs, domain: str, opset: int, path: str,
                        where: str) -> Callable[[list[Any], Any], Any]:  # fmt: skip
        """An operator without a converter: run the standard library's function body for it, if it has one."""
        from onnx.defs import SchemaError, get_schema

        schema: Any
        try:
            schema = get_schema(n.op_type, opset, domain)
        except SchemaError:
            full = f"{domain}:{n.op_type}" if domain else n.op_type
            raise UnsupportedOperatorError(f"{where}: unknown operator {full!r} (opset {opset}): no schema in onnx, "
                                           "no converter in Ember") from None  # fmt: skip
        if schema.has_function:
            versions = [v for v in schema.function_opset_versions if v <= opset]
            fp = schema.get_function_with_opset_version(max(versions)) if versions else schema.function_body
            body_opset = max(versions, default=opset) if not domain else 0  # another domain's version is not ai.onnx's
            return self.function_call(_as_function(fp), at, n, path, schema, body_opset)
        if schema.has_context_dependent_function:
            return _ContextFunction(self, n, at, opset, path)
        raise UnsupportedOperatorError(f"{where}: operator {n.op_type!r} (opset {opset}) is not supported by Ember "
                                       "and has no ONNX function body to expand")  # fmt: skip


def _as_function(fp: Any) -> Any:
    if isinstance(fp, (bytes, str)):
        from onnx import FunctionProto

        p = FunctionProto()
        p.ParseFromString(fp)
        return p
    return fp


class _ContextFunction:
    """An operator whose function body depends on its input types: expanded on the first run, per type."""

    def __init__(self, builder: _Builder, n: Any, at: Attrs, opset: int, path: str) -> None:
        self.builder, self.n, self.at, self.opset, self.path = builder, n, at, opset, path
        self.cache: dict[tuple[Any, ...], Any] = {}

    def __call__(self, args: list[Any], device: Any) -> Any:
        from onnx.defs import get_schema

        key = tuple(_type_key(a) for a in args)
        fn = self.cache.get(key)
        if fn is None:
            types = [_type_proto(a) for a in args[: len(self.n.input)]]
            schema: Any = get_schema(self.n.op_type, self.opset, self.n.domain)
            raw = schema.get_context_dependent_function(
                self.n.SerializeToString(), [t.SerializeToString() for t in types]
            )
            own = self.opset if self.n.domain in ("", "ai.onnx") else 0
            start = len(self.builder.params)
            fn = self.cache[key] = self.builder.function_call(_as_function(raw), self.at, self.n, self.path, schema,
                                                              own)  # fmt: skip
            if device is not None:  # the body's constants join a model already placed: put them where this run is
                for owner, k in self.builder.params[start:]:
                    p = owner._params[k]
                    if p is not None:
                        p._data, p._backend = (moved := p.to(device=device))._data, moved._backend
        return fn(args, device)


def _type_key(a: Any) -> Any:
    from ._dtypes import onnx_type_of

    if isinstance(a, Tensor):
        return onnx_type_of(a), a.ndim
    return ("seq", _type_key(a[0]) if a else None) if isinstance(a, list) else None


def _type_proto(a: Any) -> Any:
    """The ONNX type of a run-time value (a Tensor, or a list for a sequence), dims left unknown."""
    from onnx import helper

    from ._dtypes import onnx_type_of

    if isinstance(a, list):
        return helper.make_sequence_type_proto(_type_proto(a[0]) if a else helper.make_tensor_type_proto(1, None))
    if isinstance(a, Tensor):
        return helper.make_tensor_type_proto(onnx_type_of(a), [None] * a.ndim)
    return helper.make_tensor_type_proto(1, None)


def _bind_attributes(f: Any, n: Any, schema_defaults: dict[str, Any]) -> Any:
    """The body of function ``f`` as a graph, with attribute references replaced by the call's values.

    Its outputs are those the call names (an optional output the call omits is not computed).
    """
    from onnx import AttributeProto, GraphProto, helper

    given = {a.name: a for a in n.attribute}
    defaults = {k: v for k, v in schema_defaults.items() if v.type} | {a.name: a for a in f.attribute_proto}
    g = GraphProto(name=f.name)
    g.input.extend(helper.make_empty_tensor_value_info(i) for i in f.input)
    wanted = [o for o, called in zip(f.output, n.output) if called]
    g.output.extend(helper.make_empty_tensor_value_info(o) for o in wanted)
    for node in f.node:
        new = g.node.add()
        new.CopyFrom(node)
        del new.attribute[:]
        for a in node.attribute:
            if a.ref_attr_name:
                src = given.get(a.ref_attr_name) or defaults.get(a.ref_attr_name)
                if src is None:
                    continue
                b = AttributeProto()
                b.CopyFrom(src)
                b.name = a.name
                new.attribute.append(b)
            else:
                new.attribute.append(a)
    return g


class _HeldSubgraph(Subgraph):
    """A subgraph whose initializers live on the module (read at each run, so training and ``.to`` apply)."""

    def __init__(self, runner: GraphRunner, inputs: list[str], captured: list[str], outputs: list[str],
                 held: list[tuple[Module, str]]) -> None:  # fmt: skip
        super().__init__(runner, inputs, captured, outputs)
        self.held = held

    def run(self, inputs: Sequence[Any], outer: dict[str, Any], device: Any = None) -> list[Any]:
        return self.runner.run([*inputs, *(m._params[k] for m, k in self.held), *(outer[n] for n in self.captured)],
                               device)  # fmt: skip


def _outputs(out: Any, n_out: int) -> Any:
    """A runner's or converter's outputs as the node's: one value, or a tuple of ``n_out``."""
    if n_out == 1:
        return out[0] if isinstance(out, (tuple, list)) else out
    out = tuple(out)
    if len(out) < n_out:
        out = out + (None,) * (n_out - len(out))
    return out[:n_out]


def _call(conv: Callable[..., Any], at: Attrs) -> Callable[[list[Any], Any], Any]:
    def fn(args: list[Any], device: Any) -> Any:
        at.device = device
        while args and args[-1] is None:
            args.pop()
        out = conv(at, *args)
        if at.n_out == 1:  # a list is one value (a sequence); a tuple is several outputs
            return out[0] if isinstance(out, tuple) else out
        return _outputs(out, at.n_out)

    return fn


def _control_call(
    conv: Callable[..., Any], at: Attrs, n_in: int, captured: list[str]
) -> Callable[[list[Any], Any], Any]:
    def fn(args: list[Any], device: Any) -> Any:
        at.device = device
        outer = dict(zip(captured, args[n_in:]))
        out = conv(at, outer, *args[:n_in])
        if at.n_out == 1:
            return out[0] if isinstance(out, tuple) else out
        return _outputs(out, at.n_out)

    return fn


class OnnxModule(Module):
    """A loaded ONNX graph. Call it with the graph's inputs (positionally, or as keywords by name).

    Returns a Tensor, or a tuple in the graph's output order (``run`` gives a dict by name).
    Initializers are ``Param`` s under their ONNX names' dotted paths (``layer1.0.conv1.weight``);
    floating ones train, the others are buffers. ``input_names`` / ``output_names`` list the graph's.
    """

    def __init__(self, model: Any, label: str = "<model>") -> None:
        super().__init__()
        self.path = label
        b = _Builder(self, model, label)
        self._graph, _ = b.graph(model.graph, set(), "", top=True)
        g = model.graph
        init = {t.name for t in g.initializer}
        self.input_names = [i.name for i in g.input if i.name not in init]
        self.output_names = [o.name for o in g.output]
        self.opset = b.opsets.get("", 0)
        self._declared = {i.name: _declared(i) for i in g.input if i.name not in init}

    def forward(self, *inputs: Any, **named: Any) -> Any:
        outs = self._run(inputs, named)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def run(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """Run with inputs by name; the outputs by name (onnxruntime's ``InferenceSession.run`` shape)."""
        return dict(zip(self.output_names, self._run((), inputs)))

    def _run(self, inputs: Sequence[Any], named: dict[str, Any]) -> list[Any]:
        names = self.input_names
        if named:
            unknown = [k for k in named if k not in names]
            if unknown or len(inputs) + len(named) != len(names):
                raise TypeError(f"{self.path}: the model takes inputs {names}; got {len(inputs)} positional and "
                                f"{sorted(named)} by name")  # fmt: skip
            inputs = [*inputs, *(named[n] for n in names[len(inputs) :])]
        if len(inputs) != len(names):
            raise TypeError(f"{self.path}: the model takes {len(names)} input(s) {names}, got {len(inputs)}")
        values = [self._check(n, x) for n, x in zip(names, inputs)]
        device = next((v.device for v in values if isinstance(v, Tensor)), None)
        return self._graph.run(values, {}, device)

    def _check(self, name: str, x: Any) -> Any:
        from ._dtypes import ember_dtype

        if x is None or isinstance(x, list):
            return x
        if not isinstance(x, Tensor):
            from .._creation import tensor

            x = tensor(x)
        elem, dims = self._declared.get(name, (0, None))
        if elem:
            want = ember_dtype(elem)
            if want is not None and x.dtype != want:
                raise DTypeError(f"{self.path}: input {name!r} has dtype {x.dtype}, the graph declares {want}")
        if dims is not None and len(dims) != x.ndim:  # other dims may differ where the graph allows it
            shown = "(" + ", ".join(str(d) for d in dims) + ")"
            raise ShapeError(f"{self.path}: input {name!r} has shape {tuple(x.shape)}, the graph declares {shown}")
        return x

    def extra_repr(self) -> str:
        return f"{self.path!r}, opset {self.opset}, {len(self._graph.runner.nodes)} nodes"


def _declared(vi: Any) -> tuple[int, tuple[Any, ...] | None]:
    t = vi.type
    if not t.HasField("tensor_type"):
        return 0, None
    tt = t.tensor_type
    if not tt.HasField("shape"):
        return tt.elem_type, None
    return tt.elem_type, tuple(d.dim_value if d.HasField("dim_value") else d.dim_param or "?" for d in tt.shape.dim)
