"""lower_to_llvm: planned IR in, LLVM dialect out, with declarations taken from the manifest."""

from __future__ import annotations

import pytest

from hipdnn_ep_compiler import ir as hir
from hipdnn_ep_compiler.abi import load_abi
from hipdnn_ep_compiler.errors import AbiTargetError
from hipdnn_ep_compiler.lowering import lower_to_llvm
from hipdnn_ep_compiler.lowering.emitter import llvm_type
from hipdnn_ep_compiler.lowering.to_llvm import metadata_global

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


def test_static_program_declares_only_what_it_calls_from_the_manifest():
    abi = load_abi()
    lowered = lower_to_llvm(_module(STATIC), abi)
    assert lowered.imports == ["hipdnn_ep_get_pool_base", "hipdnn_ep_output_alloc", "hipdnn_ep_kernel_binary",
                               "hipdnn_ep_kernel_unary", "hipdnn_ep_free"]
    assert lowered.weights == ["w"] and lowered.host_scratch_slots == 0
    for name in lowered.imports:
        fn = abi.functions[name]
        params = ", ".join(llvm_type(p) for p in fn.params_llvm)
        assert f"llvm.func @{name}({params}) -> {llvm_type(fn.returns_llvm)}" in lowered.text
    entry = abi.program_entry
    assert f"llvm.func @{entry['name']}(" in lowered.text
    # binary ADD and unary TANH codes come from the manifest's enums
    assert f"llvm.mlir.constant({abi.enums['hipdnn_ep_binary_op']['ADD']} : i64)" in lowered.text
    assert "get_host_scratch_base" not in lowered.text
    hir.ir.Module.parse(lowered.text, hir.new_context())  # valid LLVM dialect


def test_outputs_come_from_output_alloc_from_abi_1_3_and_from_malloc_before():
    """From 1.3 the program states the output's shape and asks hipdnn_ep_output_alloc (the host may
    provide the memory); for 1.2 it is the 1.2 program, which allocates with hipdnn_ep_malloc."""
    new = lower_to_llvm(_module(STATIC), load_abi(target="1.3"))
    assert "hipdnn_ep_output_alloc" in new.imports and "hipdnn_ep_malloc" not in new.imports
    old = lower_to_llvm(_module(STATIC), load_abi(target="1.2"))
    assert "hipdnn_ep_malloc" in old.imports and "hipdnn_ep_output_alloc" not in old.imports


def test_target_minor_0_refuses_kernels():
    with pytest.raises(AbiTargetError, match="hipdnn_ep_kernel_binary"):
        lower_to_llvm(_module(STATIC), load_abi(target="1.0"))


def test_metadata_global_is_nul_terminated_in_its_section():
    g = metadata_global('{"a": "q\\"x"}')
    assert 'section = ".hipdnn_ep_meta"' in g
    assert g.endswith("!llvm.array<14 x i8>")  # 13 bytes of JSON and the NUL
    assert '\\22' in g and '\\00"' in g
