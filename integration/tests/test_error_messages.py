"""A refused run's message comes from the program itself when the runtime's ABI has
hipdnn_ep_set_error_message (1.2); a program compiled for ABI 1.1 does not call it and the runtime
names the failing check from the artifact's metadata instead. Both say the same thing."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

SET_ERROR_MESSAGE = "hipdnn_ep_set_error_message"
EXPECT = ("refused its inputs: node 'r' (Reshape): input shape [6] has 6 elements but target shape [4, 2] has 8")


def _reshape_relu():
    g = helper.make_graph([helper.make_node("Reshape", ["x", "s"], ["r"], name="r"),
                           helper.make_node("Relu", ["r"], ["y"], name="relu")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N"])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["?", "?"])],
                          [helper.make_tensor("s", TensorProto.INT64, [2], [4, 2])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("target", ["1.1", "1.2"])
def test_the_refusal_names_the_check_at_either_target(target, compiler, runtime, state, tmp_path):
    major, minor = runtime.abi_version()
    if (major, minor) < (1, 2):
        pytest.skip(f"needs a runtime of ABI 1.2 or newer (this one is {major}.{minor})")
    info = compiler.compile_model(_reshape_relu(), tmp_path, abi=target)
    imports = [i["name"] for i in info.metadata["imports"]]
    assert (SET_ERROR_MESSAGE in imports) == (target == "1.2"), imports
    assert info.metadata["abi"]["min_minor"] == int(target.split(".")[1])
    artifact = runtime.Artifact(info.path)
    with pytest.raises(runtime.InvalidArgumentError) as refused:
        artifact.run(state, [np.arange(6, dtype=np.float32)])
    assert str(refused.value).endswith(EXPECT), str(refused.value)
    y = artifact.run(state, [np.arange(8, dtype=np.float32) - 3])[0]
    np.testing.assert_array_equal(y, np.maximum(np.arange(8, dtype=np.float32) - 3, 0).reshape(4, 2))


def _sliced_reshape(depth: int):
    """x[N] -> x[1:-1] `depth` times -> Reshape to [4, 2]: the element count the Reshape checks is
    spelled with named symbols (the metadata's `symbols`) once the slices are deep enough."""
    one, minus_one = (helper.make_tensor(n, TensorProto.INT64, [1], [v]) for n, v in (("one", 1), ("m1", -1)))
    nodes = [helper.make_node("Slice", [f"x{k}", "one", "m1"], [f"x{k + 1}"], name=f"slice_{k}") for k in range(depth)]
    nodes += [helper.make_node("Reshape", [f"x{depth}", "s"], ["r"], name="r"),
              helper.make_node("Relu", ["r"], ["y"], name="relu")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x0", TensorProto.FLOAT, ["N"])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["?", "?"])],
                          [one, minus_one, helper.make_tensor("s", TensorProto.INT64, [2], [4, 2])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("target", ["1.1", "1.2"])
def test_a_check_over_named_symbols_names_its_values_at_either_target(target, compiler, runtime, state, tmp_path):
    """At ABI 1.1 the runtime evaluates the failing check's values from the metadata, named symbols
    through their definitions (`symbols`); from 1.2 the program says it. Both give the same numbers."""
    if runtime.abi_version() < (1, 3):
        pytest.skip(f"needs a runtime of ABI 1.3 or newer (this one is {runtime.abi_version()})")
    if tuple(int(x) for x in compiler.__version__.split(".")[:2]) < (0, 4):
        pytest.skip("needs a compiler that names large shape expressions (0.4 or newer)")
    info = compiler.compile_model(_sliced_reshape(8), tmp_path, abi=target)
    names = {s["name"] for s in info.metadata["symbols"]}
    [check] = [c for c in info.metadata["checks"] if c["kind"] == "eq"]
    assert any(t in names for v in check["values"] if isinstance(v, str)
               for t in v.replace("(", " ").replace(")", " ").split()), check
    artifact = runtime.Artifact(info.path)
    with pytest.raises(runtime.InvalidArgumentError) as refused:
        artifact.run(state, [np.arange(22, dtype=np.float32)])  # 22 - 2 * 8 = 6 elements left
    assert str(refused.value).endswith(
        "node 'r' (Reshape): input shape [6] has 6 elements but target shape [4, 2] has 8"), str(refused.value)
    y = artifact.run(state, [np.arange(24, dtype=np.float32) - 12])[0]
    np.testing.assert_array_equal(y, np.maximum(np.arange(8, 16, dtype=np.float32) - 12, 0).reshape(4, 2))


def _attention():
    """GroupQueryAttention (2 query heads, 1 KV head of 8) over a 4-position past, fed seqlens_k."""
    node = helper.make_node("GroupQueryAttention", ["q", "k", "v", "pk", "pv", "seqlens_k", "total"],
                            ["out", "present_k", "present_v"], name="attn", domain="com.microsoft", num_heads=2,
                            kv_num_heads=1)
    f = TensorProto.FLOAT
    inputs = [helper.make_tensor_value_info(n, f, d) for n, d in
              [("q", [1, 1, 16]), ("k", [1, 1, 8]), ("v", [1, 1, 8]), ("pk", [1, 1, 4, 8]), ("pv", [1, 1, 4, 8])]]
    inputs.append(helper.make_tensor_value_info("seqlens_k", TensorProto.INT32, [1]))
    outputs = [helper.make_tensor_value_info("out", f, [1, 1, 16])] + \
        [helper.make_tensor_value_info(n, f, [1, 1, 5, 8]) for n in ("present_k", "present_v")]
    g = helper.make_graph([node], "g", inputs, outputs, [helper.make_tensor("total", TensorProto.INT32, [1], [5])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])


def test_a_kernel_refusing_what_it_is_fed_names_the_node(compiler, runtime, state, tmp_path):
    """The runtime puts the node of the failing kernel call (the metadata's kernel_nodes) before the kernel's
    message: a seqlens_k that does not fit the KV cache names the attention node."""
    if runtime.abi_version() < (1, 3):
        pytest.skip(f"needs a runtime of ABI 1.3 or newer (this one is {runtime.abi_version()})")
    info = compiler.compile_model(_attention(), tmp_path)
    if "kernel_nodes" not in info.metadata:
        pytest.skip("needs a compiler that lists kernel_nodes (0.4 or newer)")
    artifact = runtime.Artifact(info.path)
    names = [i["name"] for i in artifact.metadata["inputs"]]
    feeds = {"q": np.ones((1, 1, 16), np.float32), "k": np.ones((1, 1, 8), np.float32),
             "v": np.ones((1, 1, 8), np.float32), "pk": np.ones((1, 1, 4, 8), np.float32),
             "pv": np.ones((1, 1, 4, 8), np.float32)}
    feeds["seqlens_k"] = np.array([-1], np.int32)
    with pytest.raises(runtime.InvalidArgumentError) as refused:
        artifact.run(state, [feeds[n] for n in names])
    assert ("failed with status 1: node 'attn' (com.microsoft::GroupQueryAttention): "
            "hipdnn_ep_kernel_group_query_attention: seqlens_k[0] = -1 does not fit") in str(refused.value)
    feeds["seqlens_k"] = np.array([4], np.int32)
    out, present_k, _ = artifact.run(state, [feeds[n] for n in names])
    np.testing.assert_allclose(out, np.ones((1, 1, 16)), rtol=1e-6)
    assert present_k.shape == (1, 1, 5, 8)


def test_a_total_sequence_length_beyond_the_cache_is_refused(compiler, runtime, state, tmp_path):
    """total_sequence_length fed (2^26 on a 4-position past and one new token): refused before it sizes the
    present caches, as onnxruntime refuses it, not answered with two zero-filled 2 GiB caches."""
    model = _attention()
    del model.graph.initializer[:]
    model.graph.input.append(helper.make_tensor_value_info("total", TensorProto.INT32, []))
    for out in model.graph.output[1:]:
        out.type.tensor_type.shape.dim[2].dim_param = "present"
    info = compiler.compile_model(model, tmp_path)
    if not any(c["text"].startswith("total_sequence_length {2} must equal") for c in info.metadata["checks"]):
        pytest.skip("needs a compiler that checks total_sequence_length against the KV cache (0.4 or newer)")
    artifact = runtime.Artifact(info.path)
    names = [i["name"] for i in artifact.metadata["inputs"]]
    feeds = {"q": np.ones((1, 1, 16), np.float32), "k": np.ones((1, 1, 8), np.float32),
             "v": np.ones((1, 1, 8), np.float32), "pk": np.ones((1, 1, 4, 8), np.float32),
             "pv": np.ones((1, 1, 4, 8), np.float32), "seqlens_k": np.array([4], np.int32),
             "total": np.array(2**26, np.int32)}
    with pytest.raises(runtime.InvalidArgumentError) as refused:
        artifact.run(state, [feeds[n] for n in names])
    assert str(refused.value).endswith(
        "refused its inputs: node 'attn' (com.microsoft::GroupQueryAttention): total_sequence_length 67108864 must "
        "equal past_sequence_length 4 + sequence length 1 (a growing KV cache) or be at most past_sequence_length "
        "(a shared, preallocated one)"), str(refused.value)
    feeds["total"] = np.array(5, np.int32)
    _, present_k, _ = artifact.run(state, [feeds[n] for n in names])
    assert present_k.shape == (1, 1, 5, 8)
