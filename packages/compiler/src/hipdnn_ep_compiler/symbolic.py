"""Symbolic integer expressions for dimensions and host-computable shape values.

An expression is an int, a symbol (str: "d0_1" = dimension 1 of program input 0; "v2_3" =
element 3 of program input 2, a small integer tensor read on the host) or a tuple (op, *args)
with op in OPS.  Constructors simplify (constant folding, flattening, x*1,
x+0, max(x, x)), so structurally equal expressions compare equal.

In the IR a dim is an `index` SSA value (arith over tensor.dim; ir.py); this algebra is what the shape
rules reason with (ir.dim_expr reads an index value into an expression, ir.IndexBuilder writes one
back): provable equality (a check the program need not make), compile-time decisions (ModelError),
and the metadata's text for the runtime ("(mul 4 d0_1)": `checks`, `pool_bytes`, output dims).

Bounded size: an expression never holds more than MAX_NODES nodes.  A constructor whose result would
names its largest arguments instead: a named symbol ("s7") is bound to an expression (its
definition, itself within MAX_NODES, over input symbols and earlier named symbols).  Names are
interned per compile (`Scope`): one definition, one name, so structurally equal expressions stay
equal, and each is computed once at run time (the lowering evaluates a definition at its first use,
the metadata lists the definitions it uses).  A deep graph (Slice of Slice of ..., each dim used
several times by the next) then costs a few symbols per node instead of an expression that triples
per node.  A node that needs more than MAX_NODE_SYMBOLS new names, or a graph more than MAX_SYMBOLS,
is refused (ShapeBoundError; refine-shapes names the node).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
from collections.abc import Iterator
from dataclasses import dataclass, field

Expr = int | str | tuple

# Nodes (ints, symbols and ops) an expression may hold before its largest parts become named symbols.
# Small is cheap: a name is computed once where a larger bound repeats its parts (40 exporter-style
# Reshape blocks: 18k host-program ops at 16, 22k at 24, 27k at 48, 37k at 96).
MAX_NODES = 16
# Named symbols one compile, and one node's shape rule (Scope.node_limit), may create: past these the
# shape reasoning is refused, not run on.  A node takes a few (an LLM layer's shape code a few dozen).
MAX_SYMBOLS = 200_000
MAX_NODE_SYMBOLS = 5_000


class ShapeBoundError(Exception):
    """A graph or a node needs more named shape symbols than MAX_SYMBOLS or MAX_NODE_SYMBOLS."""


@dataclass
class Scope:
    """The named symbols of one compile: name -> definition, and what is known of each."""

    defs: dict[str, Expr] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)  # to_str(definition) -> name
    nonneg: dict[str, bool] = field(default_factory=dict)
    base: dict[str, frozenset] = field(default_factory=dict)  # the input symbols a definition reads
    literals: dict[str, tuple[int, ...]] = field(default_factory=dict)  # its smallest and largest literal
    node_limit: int | None = None  # while a node's rule runs: the count of names it may not reach

    @contextlib.contextmanager
    def node(self) -> Iterator[None]:
        """A block in which at most MAX_NODE_SYMBOLS names may be created (one node's shape rule)."""
        self.node_limit = len(self.defs) + MAX_NODE_SYMBOLS
        try:
            yield
        finally:
            self.node_limit = None


_DEFAULT_SCOPE = Scope()
_scope: contextvars.ContextVar[Scope | None] = contextvars.ContextVar("hipdnn_shape_scope", default=None)


def current_scope() -> Scope:
    s = _scope.get()
    return _DEFAULT_SCOPE if s is None else s


@contextlib.contextmanager
def use_scope(scope: Scope | None = None) -> Iterator[Scope]:
    """Make `scope` (default: a new one) the named symbols' scope for the block (this thread/task)."""
    scope = Scope() if scope is None else scope
    token = _scope.set(scope)
    try:
        yield scope
    finally:
        _scope.reset(token)


def is_named(e: Expr) -> bool:
    """Whether e is a named symbol (of the current scope)."""
    return isinstance(e, str) and e[:1] == "s" and e in current_scope().defs


def definition(name: str) -> Expr:
    return current_scope().defs[name]


def size(e: Expr) -> int:
    """Nodes in e, a named symbol counting as one."""
    return _tuple_size(e) if isinstance(e, tuple) else 1


@functools.lru_cache(maxsize=1 << 16)
def _tuple_size(e: tuple) -> int:
    return 1 + sum(size(a) for a in e[1:])


def _bounded(e: Expr) -> Expr:
    """e, with its largest arguments named until it holds at most MAX_NODES nodes (a long sum or product
    also has runs of its arguments named).  Each argument is bounded already, so every definition and
    every expression stays within MAX_NODES."""
    if not isinstance(e, tuple) or size(e) <= MAX_NODES:
        return e
    op, *args = e
    sizes = [size(a) for a in args]
    total = 1 + sum(sizes)
    for i in sorted(range(len(args)), key=lambda i: -sizes[i]):
        if total <= MAX_NODES or sizes[i] == 1:
            break
        args[i] = _name(args[i])
        total -= sizes[i] - 1
    lead = [args.pop(0)] if op == "mul" and isinstance(args[0], int) else []
    while 1 + len(lead) + len(args) > MAX_NODES:  # more arguments than an expression may hold (add, mul)
        run = MAX_NODES - 1
        args = [_name((op, *args[:run]))] + args[run:]
    if op in ("add", "mul", "max", "min"):  # commutative: the canonical order, names included
        args.sort(key=_key)
    return (op, *lead, *args)


def _name(e: Expr) -> str:
    """The named symbol bound to e (at most MAX_NODES nodes), interned: one name per definition."""
    scope = current_scope()
    key = to_str(e)
    name = scope.names.get(key)
    if name is not None:
        return name
    if len(scope.defs) >= MAX_SYMBOLS:
        raise ShapeBoundError(f"the graph's shape computation needs more than {MAX_SYMBOLS} named symbols "
                              f"(expressions of more than {MAX_NODES} nodes)")
    if scope.node_limit is not None and len(scope.defs) >= scope.node_limit:
        raise ShapeBoundError(f"the shape computation needs more than {MAX_NODE_SYMBOLS} named symbols "
                              f"for this node (expressions of more than {MAX_NODES} nodes)")
    name = f"s{len(scope.defs)}"
    lits = int_literals(e)
    scope.nonneg[name] = nonnegative(e)
    scope.base[name] = frozenset(symbols(e))
    scope.literals[name] = (min(lits), max(lits)) if lits else ()
    scope.defs[name] = e
    scope.names[key] = name
    return name


def definitions(exprs, known=()) -> list[tuple[str, Expr]]:
    """The named symbols that `exprs` use, directly or through other definitions, each after those its
    definition uses (names are numbered in creation order); `known` ones, and what only they use, are
    left out.  Iterative: a chain of definitions as long as the graph is deep needs no deep recursion."""
    defs = current_scope().defs
    seen: set[str] = set()
    stack = list(exprs)
    while stack:
        e = stack.pop()
        if isinstance(e, tuple):
            stack.extend(e[1:])
        elif isinstance(e, str) and e in defs and e not in seen and e not in known:
            seen.add(e)
            stack.append(defs[e])
    return sorted(((n, defs[n]) for n in seen), key=lambda item: int(item[0][1:]))


# op -> arity (None: variadic, commutative)
OPS = {"add": None, "mul": None, "div": 2, "ceildiv": 2, "max": 2, "min": 2, "selneg": 3, "selzero": 3}


def input_dim(input_index: int, axis: int) -> str:
    """Symbol for dims[axis] of program input `input_index`."""
    return f"d{input_index}_{axis}"


def input_value(input_index: int, element: int) -> str:
    """Symbol for element `element` of program input `input_index` (read on the host)."""
    return f"v{input_index}_{element}"


def parse_symbol(sym: str) -> tuple[int, int]:
    """(input index, axis or element) of a "d" or "v" symbol."""
    i, j = sym[1:].split("_")
    return int(i), int(j)


def is_value_symbol(sym: str) -> bool:
    return sym.startswith("v")


def _key(e: Expr) -> str:
    return to_str(e)


def add(*args: Expr) -> Expr:
    const = 0
    terms: list[Expr] = []
    for a in args:
        if isinstance(a, tuple) and a[0] == "add":
            items = a[1:]
        else:
            items = (a,)
        for t in items:
            if isinstance(t, int):
                const += t
            else:
                terms.append(t)
    # combine c*x terms with the same x
    coeffs: dict[str, list] = {}
    for t in terms:
        c, base = _split_coeff(t)
        k = _key(base)
        if k in coeffs:
            coeffs[k][0] += c
        else:
            coeffs[k] = [c, base]
    out = [mul(c, b) for c, b in coeffs.values() if c != 0]
    if const:
        out.append(const)
    if not out:
        return 0
    if len(out) == 1:
        return out[0]
    return _bounded(("add", *sorted(out, key=_key)))


def _split_coeff(t: Expr) -> tuple[int, Expr]:
    if isinstance(t, tuple) and t[0] == "mul" and isinstance(t[1], int):
        rest = t[2:]
        return t[1], rest[0] if len(rest) == 1 else ("mul", *rest)
    return 1, t


def mul(*args: Expr) -> Expr:
    const = 1
    terms: list[Expr] = []
    for a in args:
        items = a[1:] if isinstance(a, tuple) and a[0] == "mul" else (a,)
        for t in items:
            if isinstance(t, int):
                const *= t
            else:
                terms.append(t)
    if const == 0:
        return 0
    if not terms:
        return const
    terms.sort(key=_key)
    if const == 1 and len(terms) == 1:
        return terms[0]
    if const == 1:
        return _bounded(("mul", *terms))
    return _bounded(("mul", const, *terms))


def sub(a: Expr, b: Expr) -> Expr:
    return add(a, mul(-1, b))


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def div(a: Expr, b: Expr) -> Expr:
    """a / b truncated toward zero (ONNX integer Div, LLVM sdiv)."""
    if isinstance(a, int) and isinstance(b, int):
        if b == 0:
            raise ZeroDivisionError("division by zero in a shape computation")
        return _trunc_div(a, b)
    if b == 1:
        return a
    if a == b:
        return 1
    # cancel common factors: (c*x*y) / (d*y) == (c/d)*x when d divides c (exact, so no rounding)
    ca, fa = _factors(a)
    cb, fb = _factors(b)
    if cb != 0 and ca % cb == 0:
        rest = list(fa)
        for f in fb:
            if f not in rest:
                break
            rest.remove(f)
        else:
            return mul(ca // cb, *rest)
    return _bounded(("div", a, b))


def _factors(e: Expr) -> tuple[int, list[Expr]]:
    if isinstance(e, int):
        return e, []
    if isinstance(e, tuple) and e[0] == "mul":
        c = e[1] if isinstance(e[1], int) else 1
        return c, [f for f in e[1:] if not isinstance(f, int)]
    return 1, [e]


def ceildiv(a: Expr, b: Expr) -> Expr:
    if isinstance(a, int) and isinstance(b, int):
        return -((-a) // b)
    if b == 1:
        return a
    return _bounded(("ceildiv", a, b))


def nonnegative(e: Expr) -> bool:
    """True when e >= 0 for every valid binding (symbols are dimensions, hence >= 0)."""
    if isinstance(e, int):
        return e >= 0
    if isinstance(e, str):
        if is_named(e):
            return current_scope().nonneg[e]
        return not is_value_symbol(e)  # dimensions are >= 0; input values may be anything
    op, *args = e
    if op in ("add", "mul", "min"):
        return all(nonnegative(a) for a in args)
    if op in ("div", "ceildiv"):
        return nonnegative(args[0]) and isinstance(args[1], int) and args[1] > 0
    if op == "max":
        return any(nonnegative(a) for a in args)
    if op in ("selneg", "selzero"):
        return nonnegative(args[1]) and nonnegative(args[2])
    return False


def maximum(a: Expr, b: Expr) -> Expr:
    if isinstance(a, int) and isinstance(b, int):
        return max(a, b)
    if a == b:
        return a
    for x, y in ((a, b), (b, a)):
        if isinstance(x, int) and x <= 0 and nonnegative(y):
            return y  # max(d, 0) == d for d >= 0 (a Slice's span, a clamp's lower bound)
    (ca, base_a), (cb, base_b) = _split_coeff(a), _split_coeff(b)
    if base_a == base_b and ca >= 0 and cb >= 0 and nonnegative(base_a):
        return mul(max(ca, cb), base_a)  # max(2x, 3x) == 3x for x >= 0
    return _bounded(("max", *sorted((a, b), key=_key)))


def minimum(a: Expr, b: Expr) -> Expr:
    if isinstance(a, int) and isinstance(b, int):
        return min(a, b)
    if a == b:
        return a
    for x, y in ((a, b), (b, a)):
        if isinstance(x, int) and x <= 0 and nonnegative(y):
            return x  # min(d, c) == c for d >= 0 >= c
    return _bounded(("min", *sorted((a, b), key=_key)))


def select_negative(x: Expr, if_negative: Expr, otherwise: Expr) -> Expr:
    """x < 0 ? if_negative : otherwise."""
    if isinstance(x, int):
        return if_negative if x < 0 else otherwise
    if if_negative == otherwise or nonnegative(x):  # a dim is never negative (Slice's end = a dim)
        return otherwise
    return _bounded(("selneg", x, if_negative, otherwise))


def select_zero(x: Expr, if_zero: Expr, otherwise: Expr) -> Expr:
    """x == 0 ? if_zero : otherwise."""
    if isinstance(x, int):
        return if_zero if x == 0 else otherwise
    if if_zero == otherwise or (if_zero == 0 and otherwise == x):  # x == 0 ? 0 : x is x
        return otherwise
    return _bounded(("selzero", x, if_zero, otherwise))


def product(items) -> Expr:
    return mul(1, *items)


def is_static(e: Expr) -> bool:
    return isinstance(e, int)


def symbols(e: Expr) -> set[str]:
    """The input symbols e reads (through the definitions of the named symbols it uses)."""
    if isinstance(e, int):
        return set()
    if isinstance(e, str):
        return set(current_scope().base[e]) if is_named(e) else {e}
    out: set[str] = set()
    for a in e[1:]:
        out |= symbols(a)
    return out


def _select(op: str, vals: list[int]) -> int:
    """max, min, selneg and selzero: their value is one of their arguments, the same under exact and
    under int64 arithmetic (evaluate and evaluate_int64 share them)."""
    if op == "max":
        return max(vals)
    if op == "min":
        return min(vals)
    if op == "selneg":
        return vals[1] if vals[0] < 0 else vals[2]
    if op == "selzero":
        return vals[1] if vals[0] == 0 else vals[2]
    raise ValueError(f"unknown expression op {op}")


def _named_value(e: str, env: dict[str, int], memo: dict, evaluator) -> int:
    """A named symbol's value under env: its definition's, computed once per evaluation (the names it
    needs first, in order, so that no evaluation recurses deeper than one definition)."""
    if e not in memo:
        for name, d in definitions([e], memo):
            memo[name] = evaluator(d, env, memo)
    return memo[e]


def evaluate(e: Expr, env: dict[str, int], _memo: dict | None = None) -> int:
    if isinstance(e, int):
        return e
    if isinstance(e, str):
        if e not in env and is_named(e):
            return _named_value(e, env, {} if _memo is None else _memo, evaluate)
        return env[e]
    _memo = {} if _memo is None else _memo
    op, *args = e
    vals = [evaluate(a, env, _memo) for a in args]
    if op == "add":
        return sum(vals)
    if op == "mul":
        r = 1
        for v in vals:
            r *= v
        return r
    if op == "div":
        return _trunc_div(vals[0], vals[1])
    if op == "ceildiv":
        return -((-vals[0]) // vals[1])
    return _select(op, vals)


def to_str(e: Expr) -> str:
    if isinstance(e, int):
        return str(e)
    if isinstance(e, str):
        return e
    return _tuple_str(e)


# The canonical forms compare and sort by text: the texts (and sizes) of recent tuples are kept, found
# by the tuple's hash (computed in C), so an expression's text is built once, not once per comparison.
@functools.lru_cache(maxsize=1 << 16)
def _tuple_str(e: tuple) -> str:
    return "(" + " ".join([e[0]] + [to_str(a) for a in e[1:]]) + ")"


def broadcast_dim(x: Expr, y: Expr) -> Expr:
    """The broadcast of two dims not known to be equal: "x == 1 ? y : x" (0 against 1 is 0).

    For every valid pair (equal, or one of them 1) "x == 1 ? y : x" and "y == 1 ? x : y" have the same
    value, so the operands are taken in a canonical order: the result is symmetric, and broadcasting it
    again with its own mirror image (Add(y, Transpose(y))) gives the same expression, not a bigger one.
    An invalid pair is never sized from: the kernels that consume the operands refuse it, and Expand
    checks each axis."""
    for a, b in ((x, y), (y, x)):
        if _capped(a, b):
            return b
    x, y = sorted((x, y), key=_key)
    return select_zero(add(x, -1), y, x)


def _capped(a: Expr, b: Expr) -> bool:
    """Whether a is min(b, c) for a constant c >= 1 (a length sliced from a fixed-size buffer: BERT's
    position ids, min(sequence, 512)).  a and b then broadcast only where they are equal or b is 1 (a
    is 1 exactly where b is, and a < b means a = c > 1 != b), so their broadcast is b for every valid
    pair.  A cap c <= 0 is no such case: min(b, 0) = 0 against b = 1 broadcasts to 0."""
    if not (isinstance(a, tuple) and a[0] == "min" and len(a) == 3):
        return False
    c, other = (a[1], a[2]) if isinstance(a[1], int) else (a[2], a[1])
    return isinstance(c, int) and c >= 1 and other == b


def broadcast(a: list[Expr], b: list[Expr]) -> list[Expr]:
    """Numpy broadcasting of two symbolic shapes (assumes the shapes are compatible at run time)."""
    n = max(len(a), len(b))
    a = [1] * (n - len(a)) + list(a)
    b = [1] * (n - len(b)) + list(b)
    out: list[Expr] = []
    for x, y in zip(a, b, strict=False):
        if x == 1:
            out.append(y)
        elif y == 1 or x == y:
            out.append(x)
        elif isinstance(x, int) and isinstance(y, int):
            raise ValueError(f"dimensions {x} and {y} do not broadcast")
        elif isinstance(x, int):
            out.append(x)  # the other must be x or 1 at run time
        elif isinstance(y, int):
            out.append(y)
        else:
            out.append(broadcast_dim(x, y))
    return out


INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1


class Int64Overflow(ArithmeticError):
    """An expression's value leaves int64 under the host program's arithmetic."""


def fits_int64(x: int) -> bool:
    return INT64_MIN <= x <= INT64_MAX


def int_literals(e: Expr) -> list[int]:
    """Every integer literal in e (the constants the host program materializes); for a named symbol,
    the smallest and the largest in its definition."""
    if isinstance(e, int):
        return [e]
    if isinstance(e, str):
        return list(current_scope().literals[e]) if is_named(e) else []
    return [x for a in e[1:] for x in int_literals(a)]


def evaluate_int64(e: Expr, env: dict[str, int], _memo: dict | None = None) -> int:
    """e under the host program's arithmetic: int64, add/mul/ceildiv raise Int64Overflow when they wrap,
    a division by zero gives 0 (the element-count checks catch what it leads to), and every argument
    is evaluated, selected or not (the program computes both sides of a select)."""
    if isinstance(e, int):
        if not fits_int64(e):
            raise Int64Overflow(f"{e} does not fit in int64")
        return e
    if isinstance(e, str):
        if e not in env and is_named(e):
            return _named_value(e, env, {} if _memo is None else _memo, evaluate_int64)
        return env[e]
    _memo = {} if _memo is None else _memo
    op, *args = e
    vals = [evaluate_int64(a, env, _memo) for a in args]

    def checked(x: int) -> int:
        if not fits_int64(x):
            raise Int64Overflow(f"{to_str(e)} overflows int64")
        return x

    if op == "add":
        r = vals[0]
        for v in vals[1:]:
            r = checked(r + v)
        return r
    if op == "mul":
        r = vals[0]
        for v in vals[1:]:
            r = checked(r * v)
        return r
    if op in ("div", "ceildiv"):
        a, b = vals
        if op == "ceildiv":
            a = checked(a + checked(b - 1))
        return 0 if b == 0 else checked(_trunc_div(a, b))
    return _select(op, vals)
