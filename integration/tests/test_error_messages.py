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
