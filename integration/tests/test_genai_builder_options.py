"""tools/models/genai_builder_model.py hands onnxruntime-genai's model builder its options by the names the
builder reads: 0.18 renamed int4_block_size and int4_accuracy_level and ignores the old names silently
(a model asked for in blocks of 128 came out in blocks of 32)."""

from __future__ import annotations

from genai_builder_model import builder_options


def test_the_renamed_options_are_written_the_new_way():
    assert builder_options(["int4_block_size=128", "int4_accuracy_level=0"]) == ["block_size=128", "accuracy_level=0"]


def test_other_options_pass_unchanged():
    assert builder_options(["block_size=32", "int4_algo_config=rtn", "flag"]) == ["block_size=32",
                                                                                    "int4_algo_config=rtn", "flag"]
