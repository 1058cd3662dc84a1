"""The pass manager: this compiler's passes and upstream ones in one MLIR PassManager, and refine-shapes'
pattern set."""

from __future__ import annotations

import pytest

from hipdnn_ep_compiler import ir as hir
from hipdnn_ep_compiler.errors import ModelError, UnsupportedError
from hipdnn_ep_compiler.ops.registry import OpDef
from hipdnn_ep_compiler.passes import PASSES, PIPELINE, Pipeline, refine_shapes, register, run_pipeline
from hipdnn_ep_compiler.passes.pipeline import UnknownPassError, split

RELU = '''
func.func @main(%arg0: tensor<2xf32>) -> tensor<2xf32> {
  %0 = "onnx.relu"(%arg0) {operand_roles = [0 : i64], "onnx.node" = "node 'a'"} : (tensor<2xf32>) -> tensor<2xf32>
  %1 = "onnx.relu"(%0) {operand_roles = [0 : i64], "onnx.node" = "node 'b'"} : (tensor<2xf32>) -> tensor<2xf32>
  return %1 : tensor<2xf32>
}
'''


def _module(text: str = RELU) -> hir.ir.Module:
    return hir.ir.Module.parse(text, hir.new_context())


def test_the_compile_pipeline_is_one_pass_manager():
    text = str(Pipeline(list(PIPELINE), hir.new_context()).pm)
    # this compiler's passes by name, each pass that leaves shape arithmetic followed by canonicalize and cse
    # and then the hipdnn verifier (the other passes verify their own result)
    assert text.startswith("builtin.module(fuse-qdq,fuse-gelu,fuse-silu-mul,fuse-gated-matmul-nbits,fuse-attention,"
                           "fuse-linear-bias,fuse-skip-layer-norm,refine-shapes,func.func(canonicalize{")
    names = [e.split("{")[0].split("(")[0] for e in split(text)]
    assert [n for n in names if n in PASSES] == list(PIPELINE)
    followed = [n for n in PIPELINE if PASSES[n].follow]
    assert followed == ["refine-shapes", "eliminate-dead-ops", "plan-memory"]
    for n in followed:
        assert names[names.index(n) + 1:names.index(n) + 3] == ["func.func", "hipdnn-verify"]
    assert names.count("hipdnn-verify") == len(followed)


def test_split_keeps_options_and_nested_pipelines_whole():
    assert split("builtin.module(refine-shapes, func.func(canonicalize{max-iterations=2}, cse),check-dtypes)") == [
        "refine-shapes", "func.func(canonicalize{max-iterations=2}, cse)", "check-dtypes"]
    assert split("") == [] and split(None) == []


def test_upstream_elements_are_parsed_by_mlir_options_included():
    module = _module()
    Pipeline(["refine-shapes", "canonicalize{max-iterations=2}", "func.func(cse)"], module.context).run(module)
    assert str(module).count('"hipdnn.unary"') == 2
    with pytest.raises(UnknownPassError) as info:
        Pipeline(["canonicalize{no-such-option=1}"], hir.new_context())
    assert info.value.element == "canonicalize{no-such-option=1}"


def test_a_pass_is_registered_once():
    with pytest.raises(ValueError, match="pass refine-shapes is registered twice"):
        register(refine_shapes)


def test_an_exception_a_pass_raises_comes_out_as_raised():
    module = _module(RELU.replace('"onnx.relu"(%0)', '"onnx.reshape"(%0)'))
    with pytest.raises(UnsupportedError, match="node 'b'"):
        run_pipeline(module)


def test_the_pipeline_runs_again_after_a_failure():
    """A kept error does not leak into the next run of the same pass manager."""
    bad, good = _module(RELU.replace('"onnx.relu"(%0)', '"onnx.reshape"(%0)')), _module()
    pipeline = Pipeline(["refine-shapes"], good.context)
    with pytest.raises(UnsupportedError):
        pipeline.run(hir.ir.Module.parse(str(bad), good.context))
    pipeline.run(good)
    assert str(good).count('"hipdnn.unary"') == 2


@pytest.mark.parametrize("name", ["refine-shapes", "check-dtypes"])  # followed by canonicalize, or not
def test_invalid_ir_after_a_pass_names_the_pass(monkeypatch, name):
    def breaks(module, abi=None):
        hir.create("hipdnn.no_such_op", [], [], {}, before=hir.ops(module)[-1])
        return module

    monkeypatch.setattr(PASSES[name].module, "run", breaks)
    with pytest.raises(RuntimeError, match=f"internal error: IR fails verification after {name}: .*no_such_op"):
        run_pipeline(_module(), until=name)


def _counting(monkeypatch, rule) -> list[str]:
    """refine-shapes with one pattern, for onnx.relu, whose rule is `rule` (it records the nodes it sees)."""
    seen: list[str] = []

    def recording(o):
        seen.append(o.where)
        rule(o)

    entry = OpDef("Relu", "relu", recording)
    monkeypatch.setattr(refine_shapes, "by_ir_names", lambda: {entry.op_name: entry})
    return seen


def test_refine_shapes_visits_producers_first_and_stops_at_the_first_refusal(monkeypatch):
    def refuse(o):
        raise ModelError(f"{o.where}: refused")

    seen = _counting(monkeypatch, refuse)
    with pytest.raises(ModelError, match="node 'a': refused"):
        run_pipeline(_module(), until="refine-shapes")
    assert seen == ["node 'a'"]  # node 'b' is not visited once 'a' refused


def test_refine_shapes_refuses_a_rule_that_leaves_its_op(monkeypatch):
    _counting(monkeypatch, lambda o: None)
    with pytest.raises(RuntimeError, match="the shape rule of onnx.relu left node 'a' in place"):
        run_pipeline(_module(), until="refine-shapes")


def test_refine_shapes_accepts_a_rule_that_erases_its_op_itself(monkeypatch):
    """A rule written before the patterns (replacing uses and erasing the op directly) still works."""
    from hipdnn_ep_compiler.ops.node import emit

    def by_hand(o):
        new = emit(o, "hipdnn.alias", [o.op.operands[0]], {}, [[2]], [o.op.results[0].type])
        o.op.results[0].replace_all_uses_with(new.results[0])
        o.op.erase()

    seen = _counting(monkeypatch, by_hand)
    module = run_pipeline(_module(), until="refine-shapes")
    assert seen == ["node 'a'", "node 'b'"] and str(module).count('"hipdnn.alias"') == 2


def test_refine_shapes_names_an_op_without_a_rule():
    module = _module(RELU.replace('"onnx.relu"(%0)', '"onnx.no_such_op"(%0)'))
    with pytest.raises(UnsupportedError, match="node 'b': no shape rule for onnx.no_such_op"):
        Pipeline(["refine-shapes"], module.context).run(module)
