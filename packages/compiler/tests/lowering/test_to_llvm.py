"""lower_to_llvm: what it returns besides the LLVM dialect text, its emitter, and properties over model sizes
(the text it writes for planned IR, per target ABI, is checked in filecheck/lower_to_llvm.mlir)."""

from __future__ import annotations

import pytest

from hipdnn_ep_compiler import ir as hir
from hipdnn_ep_compiler.abi import load_abi
from hipdnn_ep_compiler.lowering import lower_to_llvm
from hipdnn_ep_compiler.lowering.to_llvm import add_metadata_global

STATIC = '''
func.func @main(%arg0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %c0 = arith.constant 0 : index
  %c256 = arith.constant 256 : index
  "hipdnn.pool"(%c256) : (index) -> ()
  %0 = "hipdnn.weight"() {name = "w", "hipdnn.dims_slot" = [-1]} : () -> tensor<3xf32>
  %1 = "hipdnn.binary"(%arg0, %0) {op = "ADD", "hipdnn.dims_slot" = [-1], "hipdnn.storage" = "pool"} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  "hipdnn.place"(%1, %c0) : (tensor<2x3xf32>, index) -> ()
  %2 = "hipdnn.unary"(%1) {op = "TANH", "hipdnn.dims_slot" = [-1], "hipdnn.storage" = "output", "hipdnn.output_index" = 0 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %2 : tensor<2x3xf32>
}
'''


def _module(text):
    return hir.ir.Module.parse(text, hir.new_context())


def test_the_lowered_program_lists_its_imports_weights_and_scratch():
    """What the artifact is built from besides the text (filecheck/lower_to_llvm.mlir checks the text)."""
    lowered = lower_to_llvm(_module(STATIC), load_abi())
    assert lowered.imports == ["hipdnn_ep_get_pool_base", "hipdnn_ep_output_alloc", "hipdnn_ep_kernel_binary",
                               "hipdnn_ep_kernel_unary", "hipdnn_ep_free"]
    assert lowered.weights == ["w"] and lowered.host_scratch_slots == 0


def test_metadata_global_is_nul_terminated_in_its_section():
    lowered = lower_to_llvm(_module(STATIC), load_abi())
    op = add_metadata_global(lowered.module, '{"a": "q\\"x"}')
    assert list(lowered.module.body.operations)[-1].operation == op  # after the program's function
    g = str(op)
    assert 'section = ".hipdnn_ep_meta"' in g
    assert str(hir.ir.TypeAttr(op.attributes["global_type"]).value) == "!llvm.array<14 x i8>"  # 13 bytes and the NUL
    assert '\\22' in g and '\\00"' in g


def test_program_is_a_verified_module_in_the_planned_modules_context():
    planned = _module(STATIC)
    lowered = lower_to_llvm(planned, load_abi())
    assert isinstance(lowered.module, hir.ir.Module) and lowered.module.context is planned.context
    lowered.module.operation.verify()
    names = [op.operation.name for op in lowered.module.body.operations]
    n = len(lowered.imports)  # the declarations, then the constant globals, then the program
    assert names == ["llvm.func"] * n + ["llvm.mlir.global"] * (len(names) - n - 1) + ["llvm.func"]


def _emitter_function():
    from torch_mlir.dialects import llvm

    from hipdnn_ep_compiler.lowering.emitter import FunctionEmitter, function_type, llvm_type

    module = hir.ir.Module.create()
    with hir.ir.InsertionPoint(module.body):
        func = llvm.LLVMFuncOp("f", hir.ir.TypeAttr.get(function_type(["ptr"], "i32")))
    return module, FunctionEmitter(func, [llvm_type("ptr")])


def test_emitter_hoists_each_constant_and_alloca_to_the_entry_block_once():
    with hir.new_context(), hir.ir.Location.unknown():
        module, e = _emitter_function()
        fail = e.func.body.blocks.append(hir.ir.IntegerType.get_signless(32))
        e.store(e.const(7), e.gep(e.args[0], 8))
        e.branch_unless(e.icmp("eq", e.load(e.args[0], "i64"), e.const(0)), fail, e.const(1, "i32"))
        buf = e.alloca(4)  # at least 8 bytes, in the entry block though asked for in the second one
        e.store(e.const(7), buf)  # the same constant as in the entry block, not a second one
        e.ret(e.const(0, "i32"))
        e.set_block(fail)
        e.ret(fail.arguments[0])
        e.finish()
        module.operation.verify()
        entry, second, _ = e.func.body.blocks
        hoisted = [op.operation.name for op in entry.operations][:6]
        assert hoisted == ["llvm.mlir.constant"] * 4 + ["llvm.alloca", "llvm.mlir.constant"]
        assert str(module).count("llvm.mlir.constant(7 : i64)") == 1
        assert "llvm.mlir.constant(8 : i64)" in str(entry.operations[4].operands[0].owner)
        assert not any(op.operation.name == "llvm.mlir.constant" for op in second.operations)


def test_emitter_refuses_a_constant_its_type_cannot_hold():
    with hir.new_context(), hir.ir.Location.unknown():
        _, e = _emitter_function()
        assert e.const(-(2 ** 31), "i32") is not None and e.const(2 ** 32 - 1, "i32") is not None
        with pytest.raises(ValueError, match="does not fit i32"):
            e.const(2 ** 32, "i32")


def _arith_ops_emitted(layers: int, monkeypatch) -> int:
    """How many arith ops the lowering emits (before canonicalize and cse run) for a chain of `layers`
    MatMul + Relu on dynamic [batch, seq] activations."""
    import numpy as np
    from conftest import const, make_model
    from onnx import TensorProto as T
    from onnx import helper

    from hipdnn_ep_compiler.compiler import lower_model
    from hipdnn_ep_compiler.lowering import to_llvm

    nodes, prev = [], "x"
    for i in range(layers):
        nodes += [helper.make_node("MatMul", [prev, f"w{i}"], [f"m{i}"]),
                  helper.make_node("Relu", [f"m{i}"], [f"h{i}"])]
        prev = f"h{i}"
    model = make_model(nodes, [("x", T.FLOAT, ["batch", "seq", 16])], [(prev, T.FLOAT, ["batch", "seq", 16])],
                       [const(f"w{i}", np.eye(16, dtype=np.float32)) for i in range(layers)])
    counted = []
    real = to_llvm.fold_shape_arithmetic

    def count(module):
        counted.append(sum(1 for op in module.body.operations[-1].regions[0].blocks for o in op.operations
                           if o.operation.name.startswith("arith.")))
        real(module)

    monkeypatch.setattr(to_llvm, "fold_shape_arithmetic", count)
    lower_model(model, load_abi())
    return counted[0]


def test_identical_layers_reuse_their_shape_arithmetic(monkeypatch):
    """Each shape expression is emitted once: layers sized by the same expressions add no arithmetic
    (they added it again for every kernel call, for canonicalize and cse to remove)."""
    four, sixteen = _arith_ops_emitted(4, monkeypatch), _arith_ops_emitted(16, monkeypatch)
    assert four > 0
    assert sixteen - four <= four // 4, (four, sixteen)


def test_code_generation_reads_index_values_not_symbolic_expressions(monkeypatch):
    """The program computes the IR's index values: a graph deep enough to need named symbols (symbolic.py)
    lowers with the named symbols' definitions and the parser of input symbols refused while the program is
    built (in the IR a named symbol is one SSA value; expressions are read for the metadata only)."""
    from support.deep_graphs import slice_chain

    from hipdnn_ep_compiler import symbolic as sym
    from hipdnn_ep_compiler.compiler import lower_model
    from hipdnn_ep_compiler.lowering import to_llvm

    def refused(*args, **kwargs):
        raise AssertionError("code generation went through a symbolic expression")

    real = to_llvm._Lowering.build

    def build(self):
        with monkeypatch.context() as m:
            m.setattr(sym, "definitions", refused)
            m.setattr(sym, "parse_symbol", refused)
            return real(self)

    monkeypatch.setattr(to_llvm._Lowering, "build", build)
    result = lower_model(slice_chain(8), load_abi())
    assert result.scope.defs, "deep enough to need named symbols"
    assert "hipdnn_ep_kernel_slice" in result.lowered.imports
