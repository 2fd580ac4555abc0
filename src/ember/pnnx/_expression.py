"""``pnnx.Expression``: the fused elementwise expressions pnnx writes, parsed into a small AST.

The grammar is prefix calls without blanks: ``mul(add(mul(@0,2),@1),16.0)``. ``@i`` is the operator's
i-th input, literals are int, float or complex, ``[a,b]`` builds a list, ``size(@0,1)`` is
``x.size(1)``. An expression is parsed once at load time and compiled to a closure; values stay Python
numbers while every operand is one (shape arithmetic), and become Ember operations once a tensor is
involved, so broadcasting and type promotion follow Ember's (= PyTorch's) rules.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .. import _creation, ops
from .._tensor import Tensor
from ._reader import PnnxFormatError

__all__ = ["Const", "Ref", "Call", "ListExpr", "parse_expression", "compile_expression", "BINARY", "UNARY"]


@dataclass(frozen=True)
class Const:
    value: Any


@dataclass(frozen=True)
class Ref:
    index: int


@dataclass(frozen=True)
class Call:
    name: str
    args: tuple[Any, ...]


@dataclass(frozen=True)
class ListExpr:
    items: tuple[Any, ...]


Node = Const | Ref | Call | ListExpr

_TOKEN = re.compile(
    r"(?P<ref>@\d+)"
    r"|(?P<num>-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?(?:[+-](?:\d+\.?\d*)(?:[eE][+-]?\d+)?j)?j?)"
    r"|(?P<name>-?[A-Za-z_][\w.]*)"
    r"|(?P<punct>[(),\[\]])"
)


def _tensor(x: Any) -> bool:
    return isinstance(x, Tensor)


def _fmod(a: Any, b: Any) -> Any:
    if _tensor(a) or _tensor(b):
        return a - ops.trunc(a / b) * b
    return math.fmod(a, b)


def _logaddexp(a: Any, b: Any) -> Any:
    if not (_tensor(a) or _tensor(b)):
        m = max(a, b)
        return m + math.log(math.exp(a - m) + math.exp(b - m))
    m = ops.maximum(a, b) if _tensor(a) and _tensor(b) else (ops.clamp(a, min=b) if _tensor(a) else ops.clamp(b, min=a))
    return m + ops.log(ops.exp(a - m) + ops.exp(b - m))


def _minmax(fn: Callable[..., Any], clamp_key: str, py: Callable[..., Any]) -> Callable[[Any, Any], Any]:
    def f(a: Any, b: Any) -> Any:
        if _tensor(a) and _tensor(b):
            return fn(a, b)
        if _tensor(a) or _tensor(b):
            t, s = (a, b) if _tensor(a) else (b, a)
            return ops.clamp(t, **{clamp_key: s})
        return py(a, b)

    return f


def _logical(name: str, py: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    def f(a: Any, b: Any) -> Any:
        if not (_tensor(a) or _tensor(b)):
            return py(a, b)
        return getattr(ops, name)(a, b)

    return f


def _shift(sign: int) -> Callable[[Any, Any], Any]:
    def f(a: Any, b: Any) -> Any:
        if not (_tensor(a) or _tensor(b)):
            return a << b if sign > 0 else a >> b
        return a * (2**b) if sign > 0 else ops.floor_divide(a, 2**b)

    return f


def _atan2(a: Any, b: Any) -> Any:
    if not (_tensor(a) or _tensor(b)):
        return math.atan2(a, b)
    return ops.atan2(a if _tensor(a) else _creation.full_like(b, a), b if _tensor(b) else _creation.full_like(a, b))


#: Binary operators: name -> f(a, b) on Python numbers or Tensors (Python operators dispatch to Ember ops).
BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "floor_divide": lambda a, b: a // b,
    "remainder": lambda a, b: a % b,
    "pow": lambda a, b: a**b,
    "and": _logical("logical_and", lambda a, b: a & b),
    "or": _logical("logical_or", lambda a, b: a | b),
    "xor": _logical("logical_xor", lambda a, b: a ^ b),
    "lshift": _shift(1),
    "rshift": _shift(-1),
    "atan2": _atan2,
    "fmod": _fmod,
    "max": _minmax(ops.maximum, "min", max),
    "maximum": _minmax(ops.maximum, "min", max),
    "min": _minmax(ops.minimum, "max", min),
    "minimum": _minmax(ops.minimum, "max", min),
    "logaddexp": _logaddexp,
}


def _sign(x: float) -> float:
    return float((x > 0) - (x < 0)) if isinstance(x, float) else (x > 0) - (x < 0)


def _unary(name: str, py: Callable[[Any], Any]) -> Callable[[Any], Any]:
    fn = getattr(ops, name)
    return lambda x: fn(x) if _tensor(x) else py(x)


#: Unary operators: name -> f(x) on a Python number or a Tensor.
UNARY: dict[str, Callable[[Any], Any]] = {
    "neg": lambda x: -x,
    "abs": abs,
    "acos": _unary("acos", math.acos),
    "acosh": _unary("acosh", math.acosh),
    "asin": _unary("asin", math.asin),
    "asinh": _unary("asinh", math.asinh),
    "atan": _unary("atan", math.atan),
    "atanh": _unary("atanh", math.atanh),
    "ceil": _unary("ceil", math.ceil),
    "cos": _unary("cos", math.cos),
    "cosh": _unary("cosh", math.cosh),
    "erf": _unary("erf", math.erf),
    "exp": _unary("exp", math.exp),
    "expm1": _unary("expm1", math.expm1),
    "floor": _unary("floor", math.floor),
    "log": _unary("log", math.log),
    "log10": _unary("log10", math.log10),
    "log1p": _unary("log1p", math.log1p),
    "reciprocal": _unary("reciprocal", lambda x: 1.0 / x),
    "round": _unary("round", round),
    "rsqrt": _unary("rsqrt", lambda x: 1.0 / math.sqrt(x)),
    "sign": _unary("sign", _sign),
    "sin": _unary("sin", math.sin),
    "sinh": _unary("sinh", math.sinh),
    "sqrt": _unary("sqrt", math.sqrt),
    "square": _unary("square", lambda x: x * x),
    "tan": _unary("tan", math.tan),
    "tanh": _unary("tanh", math.tanh),
    "trunc": _unary("trunc", math.trunc),
    "int": lambda x: x.long() if _tensor(x) else int(x),
    "torch.float": lambda x: x.float() if _tensor(x) else float(x),
    "torch.long": lambda x: x.long() if _tensor(x) else int(x),
    "torch.int": lambda x: x.int() if _tensor(x) else int(x),
    "torch.bool": lambda x: x.bool() if _tensor(x) else bool(x),
}

_CONSTANTS = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan, "True": True, "False": False, "None": None}


def _number(text: str) -> Any:
    if text.endswith("j"):
        return complex(text)
    if any(c in text for c in ".eE"):
        return float(text)
    return int(text)


def parse_expression(text: str) -> Node:
    """Parse an ``expr=`` string into an AST (``Const``, ``Ref``, ``Call``, ``ListExpr``).

    pnnx writes calls with their brackets (``mul(@0,2)``), but for some unary functions it writes the name
    and its argument as siblings: ``add(sub(expm1,@0),0.5),log1p,abs(@0)`` means
    ``add(sub(expm1(@0), 0.5), log1p(abs(@0)))``. pnnx's own reader treats the text as prefix notation
    (brackets and commas only separate tokens; each function takes its arity), and so does this one when
    the bracketed reading fails.
    """
    tokens = _tokens(text)
    try:
        return _parse_bracketed(text, tokens)
    except PnnxFormatError as bracketed_error:
        try:
            return _parse_prefix(text, tokens)
        except PnnxFormatError:
            raise bracketed_error from None


def _tokens(text: str) -> list[tuple[str, str]]:
    tokens: list[tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise PnnxFormatError(f"pnnx.Expression {text!r}: unexpected character {text[pos]!r} at {pos}")
        kind = m.lastgroup or ""
        tokens.append((kind, m.group()))
        pos = m.end()
    return tokens


def _arity(name: str) -> int | None:
    if name in BINARY or name == "size":
        return 2
    return 1 if name in UNARY else None


def _parse_prefix(text: str, tokens: list[tuple[str, str]]) -> Node:
    """Prefix notation by arity: brackets and commas separate tokens; ``[`` ... ``]`` still builds a list."""
    depth = 0
    for _, tok in tokens:  # the brackets must still pair up
        depth += (tok == "(") - (tok == ")")
        if depth < 0:
            break
    if depth != 0:
        raise PnnxFormatError(f"pnnx.Expression {text!r}: unbalanced brackets")
    toks = [t for t in tokens if t[1] not in ("(", ")", ",")]
    i = 0

    def node() -> Node:
        nonlocal i
        if i >= len(toks):
            raise PnnxFormatError(f"pnnx.Expression {text!r}: unexpected end")
        kind, tok = toks[i]
        i += 1
        if kind == "ref":
            return Ref(int(tok[1:]))
        if kind == "num":
            return Const(_number(tok))
        if tok == "[":
            items: list[Node] = []
            while i < len(toks) and toks[i][1] != "]":
                items.append(node())
            if i >= len(toks):
                raise PnnxFormatError(f"pnnx.Expression {text!r}: unclosed '['")
            i += 1
            return ListExpr(tuple(items))
        n = _arity(tok) if kind == "name" else None
        if n is None:
            if kind == "name":
                return Const(_CONSTANTS.get(tok, tok))
            raise PnnxFormatError(f"pnnx.Expression {text!r}: unexpected {tok!r}")
        return Call(tok, tuple(node() for _ in range(n)))

    tree = node()
    if i != len(toks):
        raise PnnxFormatError(f"pnnx.Expression {text!r}: unexpected {toks[i][1]!r} after the expression")
    return tree


def _parse_bracketed(text: str, tokens: list[tuple[str, str]]) -> Node:
    i = 0

    def expect(tok: str) -> None:
        nonlocal i
        if i >= len(tokens) or tokens[i][1] != tok:
            got = tokens[i][1] if i < len(tokens) else "the end"
            raise PnnxFormatError(f"pnnx.Expression {text!r}: expected {tok!r}, got {got!r}")
        i += 1

    def items(close: str) -> tuple[Node, ...]:
        nonlocal i
        out: list[Node] = []
        if i < len(tokens) and tokens[i][1] == close:
            i += 1
            return ()
        while True:
            out.append(node())
            if i < len(tokens) and tokens[i][1] == ",":
                i += 1
                continue
            expect(close)
            return tuple(out)

    def node() -> Node:
        nonlocal i
        if i >= len(tokens):
            raise PnnxFormatError(f"pnnx.Expression {text!r}: unexpected end")
        kind, tok = tokens[i]
        i += 1
        if kind == "ref":
            return Ref(int(tok[1:]))
        if kind == "num":
            return Const(_number(tok))
        if tok == "[":
            return ListExpr(items("]"))
        if kind == "name":
            if i < len(tokens) and tokens[i][1] == "(":
                i += 1
                args = items(")")
                if tok != "size" and tok not in BINARY and tok not in UNARY:
                    raise PnnxFormatError(f"pnnx.Expression {text!r}: unknown function {tok!r}; supported: size, "
                                          f"{', '.join(sorted(BINARY))}, {', '.join(sorted(UNARY))}")  # fmt: skip
                want = (1, 2) if tok == "size" else (2,) if tok in BINARY else (1,)
                if len(args) not in want:
                    raise PnnxFormatError(f"pnnx.Expression {text!r}: {tok} takes {' or '.join(map(str, want))} "
                                          f"arguments, got {len(args)}")  # fmt: skip
                return Call(tok, args)
            if _arity(tok) is not None:  # a function name without its brackets: pnnx's prefix form
                raise PnnxFormatError(f"pnnx.Expression {text!r}: function {tok!r} without arguments")
            # a bare word is a string constant (``expr=ij`` for meshgrid's indexing)
            return Const(_CONSTANTS.get(tok, tok))
        raise PnnxFormatError(f"pnnx.Expression {text!r}: unexpected {tok!r}")

    tree = node()
    if i != len(tokens):
        raise PnnxFormatError(f"pnnx.Expression {text!r}: unexpected {tokens[i][1]!r} after the expression")
    return tree


def _size(x: Any, dim: Any = None) -> Any:
    shape = x.shape if hasattr(x, "shape") else ()
    return list(shape) if dim is None else shape[dim]


def compile_expression(tree: Node, n_inputs: int) -> Callable[[list[Any]], Any]:
    """A closure ``f(inputs) -> value`` evaluating ``tree``; checks ``@i`` against ``n_inputs`` now."""
    if isinstance(tree, Const):
        v = tree.value
        return lambda inputs: v
    if isinstance(tree, Ref):
        k = tree.index
        if k >= n_inputs:
            raise PnnxFormatError(f"pnnx.Expression: @{k} refers past the operator's {n_inputs} inputs")
        return lambda inputs: inputs[k]
    if isinstance(tree, ListExpr):
        parts = [compile_expression(t, n_inputs) for t in tree.items]
        return lambda inputs: [p(inputs) for p in parts]
    args = [compile_expression(t, n_inputs) for t in tree.args]
    if tree.name == "size":
        if len(args) == 1:
            a0 = args[0]
            return lambda inputs: _size(a0(inputs))
        a0, a1 = args
        return lambda inputs: _size(a0(inputs), a1(inputs))
    if tree.name in BINARY:
        fb = BINARY[tree.name]
        a0, a1 = args
        return lambda inputs: fb(a0(inputs), a1(inputs))
    fu = UNARY[tree.name]
    a0 = args[0]
    return lambda inputs: fu(a0(inputs))
