"""fuse-gated-matmul-nbits: a Llama MLP of an int4 model as onnxruntime-genai's model builder writes it (gate and
up MatMulNBits of one A, Sigmoid, Mul, Mul) compiled as one call of the matmul_nbits_silu_mul kernel, and compared
with onnxruntime's CPU EP on the unfused graph, on the reference runtime and on the C++ runtime's CPU backend;
pairs that are not exactly that (two A's, different N or block_size, a bias, a projection read elsewhere or a
graph output, a target runtime ABI before 1.3) stay as imported and stay correct."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import const, make_model, ort_run
from onnx import TensorProto as T
from onnx import helper
from support.runtime_cpu import run_on_runtime

from hipdnn_ep_compiler import compile_model, load_weights
from hipdnn_ep_compiler import ir as hir
from hipdnn_ep_compiler.abi import bundled_manifest_path
from hipdnn_ep_compiler.artifact import ArtifactInfo
from hipdnn_ep_compiler.errors import AbiTargetError
from hipdnn_ep_compiler.frontend import load_model
from hipdnn_ep_compiler.frontend.importer import import_model
from hipdnn_ep_compiler.passes import run_pipeline

MS = "com.microsoft"
NP = {T.FLOAT: np.float32, T.FLOAT16: np.float16}
KERNEL = "hipdnn_ep_kernel_matmul_nbits_silu_mul"
n = helper.make_node


def projection(rng, name: str, k: int, n_out: int, block: int, zero_points: bool, elem: int, a: str = "a",
               bias: bool = False, **attrs):
    """A MatMulNBits node `name`_proj of `a` (random 4-bit B, scales of A's type, optionally zero points and a
    bias) writing `name`, and its initializers."""
    blocks = -(-k // block)
    inits = [const(f"{name}_b", rng.integers(0, 256, (n_out, blocks, block // 2), dtype=np.uint8)),
             const(f"{name}_s", rng.uniform(0.01, 0.05, (n_out, blocks)).astype(NP[elem]))]
    inputs = [a, f"{name}_b", f"{name}_s"]
    if zero_points:
        inits.append(const(f"{name}_z", rng.integers(0, 256, (n_out * ((blocks + 1) // 2),), dtype=np.uint8)))
        inputs.append(f"{name}_z")
    if bias:
        inits.append(const(f"{name}_bias", rng.standard_normal(n_out).astype(NP[elem])))
        inputs += [""] * (5 - len(inputs)) + [f"{name}_bias"]  # bias is input 5
    attrs = {"K": k, "N": n_out, "bits": 4, "block_size": block, "accuracy_level": 0, **attrs}
    return n("MatMulNBits", inputs, [name], name=f"{name}_proj/MatMulNBits", domain=MS, **attrs), inits


def mlp(k=80, n_out=48, block=32, zero_points=(True, True), elem=T.FLOAT, up=None, up_a="a", outputs=(),
        silu_of="gate", seed=0):
    """a [b, s, K] -> gate and up MatMulNBits -> y = gate * sigmoid(gate) * up [b, s, N]; `up` changes the up
    projection's keywords (N, block, bias...), `up_a` names its A, `outputs` adds graph outputs (name, N),
    silu_of="up" swaps the projections' roles: y = up * sigmoid(up) * gate."""
    rng = np.random.default_rng(seed)
    gate, g_inits = projection(rng, "gate", k, n_out, block, zero_points[0], elem)
    up_kw = {"n_out": n_out, "block": block, "zero_points": zero_points[1], **(up or {})}
    up_node, u_inits = projection(rng, "up", k, elem=elem, a=up_a, **up_kw)
    other = "up" if silu_of == "gate" else "gate"
    nodes = [gate, up_node, n("Sigmoid", [silu_of], ["sig"], name="act_fn/Sigmoid"),
             n("Mul", [silu_of, "sig"], ["silu"], name="act_fn/Mul"), n("Mul", ["silu", other], ["y"], name="mlp/Mul")]
    inputs = [("a", elem, ["b", "s", k])] + ([(up_a, elem, ["b", "s", k])] if up_a != "a" else [])
    outs = [("y", elem, ["b", "s", n_out])] + [(name, elem, ["b", "s", width]) for name, width in outputs]
    return make_model(nodes, inputs, outs, g_inits + u_inits, extra_opsets=((MS, 1),))


def ops_after_fusion(m) -> list[str]:
    loaded, _ = load_model(m)
    module = run_pipeline(import_model(loaded), until="fuse-gated-matmul-nbits")
    return [op.operation.name for op in module.body.operations[0].regions[0].blocks[0].operations]


def fused_op(m) -> dict | None:
    """The onnx.matmul_nbits_silu_mul that `m` has after the pass, if any: its operands (weights by name, A as
    "A"), operand roles and K, N, bits and block_size."""
    loaded, _ = load_model(m)
    module = run_pipeline(import_model(loaded), until="fuse-gated-matmul-nbits")
    for op in (o.operation for o in module.body.operations[0].regions[0].blocks[0].operations):
        if op.name == "onnx.matmul_nbits_silu_mul":
            return {"operands": [hir.get_str(hir.defining_op(v), "name") if hir.defining_op(v) else "A"
                                 for v in op.operands],
                    "roles": hir.get_ints(op, "operand_roles"),
                    "attrs": [hir.get_int(op, f"onnx.{a}") for a in ("K", "N", "bits", "block_size")]}
    return None


def fused(m, tmp_path) -> ArtifactInfo | None:
    """`m` compiled, where it is the one fused kernel call (and nothing else), checked at both ends: the IR after
    the pass and the artifact's kernel calls; None where the pass left it as imported."""
    ops = ops_after_fusion(m)
    info = compile_model(m, tmp_path / "art")
    one = KERNEL in info.imports
    assert one == (len(info.metadata["kernel_nodes"]) == 1)
    assert one == ("onnx.matmul_nbits_silu_mul" in ops) == ("onnx.matmul_nbits" not in ops)
    return info if one else None


def feeds_of(m, rows: int, seed: int = 1) -> dict:
    """Random values of m's graph inputs, [1, rows, K] each."""
    rng = np.random.default_rng(seed)
    feeds = {}
    for vi in m.graph.input:
        k = vi.type.tensor_type.shape.dim[-1].dim_value
        feeds[vi.name] = rng.standard_normal((1, rows, k)).astype(NP[vi.type.tensor_type.elem_type])
    return feeds


def run_compiled(m, runtime, feeds: list[dict], tmp_path, **compile_kw) -> tuple[ArtifactInfo, list]:
    """`m` compiled (compile_model's keywords) and its outputs for each feed, on the reference runtime `runtime`
    or on the C++ runtime's CPU backend ("cpu")."""
    info = compile_model(m, tmp_path / "run", **compile_kw)
    weights = load_weights(info.metadata, m)
    names = [i["name"] for i in info.metadata["inputs"]]
    runs = [[f[k] for k in names] + weights for f in feeds]
    if runtime == "cpu":
        return info, run_on_runtime(info.program, runs, tmp_path)
    return info, [runtime.run(info.program, r) for r in runs]


def check_numbers(m, results, feeds) -> None:
    """Each feed's outputs match onnxruntime's CPU EP on `m` as it is."""
    for f, got in zip(feeds, results, strict=True):
        want = ort_run(m, f)
        for g, w in zip(got, want, strict=True):
            assert g.shape == w.shape and g.dtype == w.dtype
            tol = 2e-2 if g.dtype == np.float16 else 1e-4
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=tol, atol=tol)


# ---------------------------------------------------------------- what fuses


@pytest.mark.parametrize("zero_points", [(True, True), (False, False), (True, False), (False, True)],
                         ids=["zp-both", "zp-none", "zp-gate", "zp-up"])
def test_the_gated_mlp_is_one_kernel_call(zero_points, tmp_path):
    info = fused(mlp(zero_points=zero_points), tmp_path)
    assert info is not None
    assert "hipdnn_ep_kernel_matmul_nbits" not in info.imports and "hipdnn_ep_kernel_binary" not in info.imports
    assert info.metadata["abi"]["min_minor"] == 3


def test_the_fused_op_gives_the_kernel_positions_of_its_operands():
    # zero points of up only: A, B and scales of the gate at 0..2, up's B, scales and zero points at 4..6
    op = fused_op(mlp(zero_points=(False, True)))
    assert op["operands"] == ["A", "gate_b", "gate_s", "up_b", "up_s", "up_z"]
    assert op["roles"] == [0, 1, 2, 4, 5, 6]
    assert op["attrs"] == [80, 48, 4, 32]


# ---------------------------------------------------------------- what does not


@pytest.mark.parametrize("change", [
    pytest.param({"up_a": "a2"}, id="another-A"),
    pytest.param({"up": {"block": 16}}, id="block_size"),
    pytest.param({"up": {"n_out": 1}}, id="N"),  # up [b, s, 1] broadcasts over the gate's [b, s, 48]
    pytest.param({"up": {"bias": True}}, id="bias"),
    pytest.param({"outputs": (("gate", 48),)}, id="gate-returned"),
    pytest.param({"outputs": (("up", 48),)}, id="up-returned"),
])
def test_near_misses_are_not_fused(change, refruntime, tmp_path):
    m = mlp(**change)
    assert fused(m, tmp_path) is None
    feeds = [feeds_of(m, rows) for rows in (1, 5)]
    check_numbers(m, run_compiled(m, refruntime, feeds, tmp_path)[1], feeds)


def test_a_projection_read_elsewhere_is_not_fused(refruntime, tmp_path):
    m = mlp()
    m.graph.node.append(n("Relu", ["up"], ["r"]))
    m.graph.output.append(helper.make_tensor_value_info("r", T.FLOAT, ["b", "s", 48]))
    assert fused(m, tmp_path) is None
    feeds = [feeds_of(m, rows) for rows in (1, 5)]
    check_numbers(m, run_compiled(m, refruntime, feeds, tmp_path)[1], feeds)


def test_the_projection_under_the_sigmoid_is_the_gate(refruntime, tmp_path):
    # SiLU(up) * gate: the silu_mul's first operand (here "up", without zero points) is the kernel's gate
    m = mlp(zero_points=(True, False), silu_of="up")
    op = fused_op(m)
    assert op["operands"] == ["A", "up_b", "up_s", "gate_b", "gate_s", "gate_z"]
    assert op["roles"] == [0, 1, 2, 4, 5, 6]
    feeds = [{"a": np.random.default_rng(2).standard_normal((2, 3, 80)).astype(np.float32)}]
    check_numbers(m, run_compiled(m, refruntime, feeds, tmp_path)[1], feeds)


def test_a_target_abi_before_1_3_gets_the_unfused_program(tmp_path):
    # MatMulNBits itself is ABI 1.3's: compiled for 1.2, the error names its kernel, not the fused one
    with pytest.raises(AbiTargetError, match="'hipdnn_ep_kernel_matmul_nbits', introduced in ABI 1.3"):
        compile_model(mlp(), tmp_path / "a12", abi="1.2")


def manifest_without_the_kernel(tmp_path, since: int | None) -> Path:
    """The bundled manifest without matmul_nbits_silu_mul (a runtime built before it), or with it dated ABI
    1.`since` (the manifest grown to that minor)."""
    data = json.loads(bundled_manifest_path().read_text())
    fn = next(f for f in data["functions"] if f["name"] == KERNEL)
    if since is None:
        data["functions"].remove(fn)
    else:
        fn["since"], data["abi"]["minor"] = since, since
        data["version_nodes"][str(since)] = f"HIPDNN_EP_1.{since}"
    p = tmp_path / "manifest.json"
    p.write_text(json.dumps(data))
    return p


@pytest.mark.parametrize("since", [None, 4], ids=["absent", "dated-1.4"])
def test_a_target_runtime_without_the_kernel_keeps_the_projections(since, refruntime, tmp_path):
    # compiled for a runtime without the kernel: gate, up and the SILU_MUL, three calls, as before the pass
    m = mlp(zero_points=(False, True))
    feeds = [feeds_of(m, 5)]
    info, results = run_compiled(m, refruntime, feeds, tmp_path, abi="1.3",
                                 manifest=manifest_without_the_kernel(tmp_path, since))
    assert KERNEL not in info.imports and "hipdnn_ep_kernel_matmul_nbits" in info.imports
    assert len(info.metadata["kernel_nodes"]) == 3
    check_numbers(m, results, feeds)


# ---------------------------------------------------------------- numbers


@pytest.mark.parametrize("runtime", ["reference", "cpu"])
@pytest.mark.parametrize("elem", [T.FLOAT, T.FLOAT16], ids=["fp32", "fp16"])
@pytest.mark.parametrize("zero_points", [(True, True), (False, False), (True, False), (False, True)],
                         ids=["zp-both", "zp-none", "zp-gate", "zp-up"])
@pytest.mark.parametrize("k,block", [(80, 32), (128, 64)], ids=["K80-block32", "K128-block64"])
def test_matches_onnxruntime(k, block, zero_points, elem, runtime, refruntime, tmp_path):
    """M = 1 (a decode step) and M = 5 rows of A [1, M, K], K = 80 not a multiple of the block included; on the
    reference runtime and on the C++ runtime's CPU backend (skipped where hipdnn_ep_runtime is not installed)."""
    m = mlp(k=k, block=block, zero_points=zero_points, elem=elem, seed=k + block)
    feeds = [feeds_of(m, rows) for rows in (1, 5)]
    info, results = run_compiled(m, "cpu" if runtime == "cpu" else refruntime, feeds, tmp_path)
    assert KERNEL in info.imports
    check_numbers(m, results, feeds)
