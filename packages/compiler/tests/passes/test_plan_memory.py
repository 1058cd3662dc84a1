"""plan-memory: properties of the plan over many dims (what the IR spells is checked in
filecheck/plan_memory.mlir)."""

from hipdnn_ep_compiler import ir as hir
from hipdnn_ep_compiler import symbolic as sym
from hipdnn_ep_compiler.passes import plan_memory, run_pass


def _run(text):
    module = hir.ir.Module.parse(text, hir.new_context())
    run_pass(module, plan_memory.NAME)
    assert module.operation.verify()
    return str(module)


def _plan(out: str) -> tuple[list, object]:
    """The pool offsets (hipdnn.place, in op order) and the pool size (hipdnn.pool) read from the IR."""
    module = hir.ir.Module.parse(out, hir.new_context())
    offsets = [hir.offset_of(r) for op in hir.ops(module) for r in op.results if hir.offset_of(r) is not None]
    return offsets, hir.pool_size(module)


def _chain(n: int) -> str:
    """n dynamic unary ops where op k reads ops k-1 and k-2 (two buffers live at every step)."""
    lines = ['%c0 = arith.constant 0 : index', '%d = tensor.dim %arg0, %c0 : tensor<?xf32>',
             '%0 = "hipdnn.unary"(%arg0) {op = "RELU", "hipdnn.dims_slot" = [0]} '
             ': (tensor<?xf32>) -> tensor<?xf32>', '"hipdnn.tie_dims"(%0, %d) : (tensor<?xf32>, index) -> ()']
    for k in range(1, n):
        a = f"%{k - 1}"
        b = f"%{k - 2}" if k >= 2 else "%arg0"
        lines.append(f'%{k} = "hipdnn.binary"({a}, {b}) {{op = "ADD", '
                     f'"hipdnn.dims_slot" = [0]}} : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>')
        lines.append(f'"hipdnn.tie_dims"(%{k}, %d) : (tensor<?xf32>, index) -> ()')
    body = "\n  ".join(lines)
    return (f"func.func @main(%arg0: tensor<?xf32>) -> tensor<?xf32> {{\n  {body}\n"
            f"  return %{n - 1} : tensor<?xf32>\n}}")


def test_dynamic_plan_grows_linearly_and_reuses_slots():
    """Offsets nest no earlier offset: a 40-op chain needs three slots, not forty nested maxima."""
    out = _run(_chain(40))
    offsets, pool = _plan(out)
    assert sym.evaluate(pool, {"d0_0": 1000}) == 3 * 4096  # three live 4000-byte buffers, 256-aligned
    assert len({sym.to_str(o) for o in offsets}) == 3
    assert len(out) < 40 * 500


def test_dynamic_slots_never_overlap_live_buffers():
    out = _run('''
func.func @main(%arg0: tensor<?xf32>, %arg1: tensor<?xf32>) -> tensor<?xf32> {
  %0 = "hipdnn.unary"(%arg0) {op = "RELU", "hipdnn.dims_slot" = [0]} : (tensor<?xf32>) -> tensor<?xf32>
  %t5_2 = arith.constant 0 : index
  %t5_3 = tensor.dim %arg0, %t5_2 : tensor<?xf32>
  "hipdnn.tie_dims"(%0, %t5_3) : (tensor<?xf32>, index) -> ()
  %1 = "hipdnn.unary"(%arg1) {op = "EXP", "hipdnn.dims_slot" = [1]} : (tensor<?xf32>) -> tensor<?xf32>
  %t6_2 = arith.constant 0 : index
  %t6_3 = tensor.dim %arg1, %t6_2 : tensor<?xf32>
  "hipdnn.tie_dims"(%1, %t6_3) : (tensor<?xf32>, index) -> ()
  %2 = "hipdnn.unary"(%0) {op = "TANH", "hipdnn.dims_slot" = [0]} : (tensor<?xf32>) -> tensor<?xf32>
  %t7_2 = arith.constant 0 : index
  %t7_3 = tensor.dim %arg0, %t7_2 : tensor<?xf32>
  "hipdnn.tie_dims"(%2, %t7_3) : (tensor<?xf32>, index) -> ()
  %3 = "hipdnn.unary"(%1) {op = "NEG", "hipdnn.dims_slot" = [1]} : (tensor<?xf32>) -> tensor<?xf32>
  %t8_2 = arith.constant 0 : index
  %t8_3 = tensor.dim %arg1, %t8_2 : tensor<?xf32>
  "hipdnn.tie_dims"(%3, %t8_3) : (tensor<?xf32>, index) -> ()
  %4 = "hipdnn.concat"(%2, %3) {axis = 0 : i64, "hipdnn.dims_slot" = [2]} : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  %t9_3 = arith.constant 0 : index
  %t9_4 = tensor.dim %arg0, %t9_3 : tensor<?xf32>
  %t9_6 = arith.constant 0 : index
  %t9_7 = tensor.dim %arg1, %t9_6 : tensor<?xf32>
  %t9_8 = arith.addi %t9_4, %t9_7 : index
  "hipdnn.tie_dims"(%4, %t9_8) : (tensor<?xf32>, index) -> ()
  return %4 : tensor<?xf32>
}''')
    offsets = _plan(out)[0]
    sizes = [lambda env, s=s: 256 * -(-4 * env[s] // 256) for s in ("d0_0", "d1_0", "d0_0", "d1_0")]
    live = [(0, 2), (1, 3), (2, 4), (3, 4)]  # op index ranges: %0..%2, %1..%3, %2..%4, %3..%4
    for env in ({"d0_0": 1, "d1_0": 1000}, {"d0_0": 1000, "d1_0": 1}, {"d0_0": 64, "d1_0": 64}):
        spans = [(sym.evaluate(o, env), sym.evaluate(o, env) + size(env)) for o, size in zip(offsets, sizes, strict=True)]
        for i in range(4):
            for j in range(i + 1, 4):
                if live[i][0] <= live[j][1] and live[j][0] <= live[i][1]:
                    assert spans[i][1] <= spans[j][0] or spans[j][1] <= spans[i][0], (env, i, j, spans)
