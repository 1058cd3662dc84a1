"""One builder per zoo model: a torchvision or transformers architecture with random weights,
exported with torch.onnx, or a model derived from another one by onnxruntime's own tools (fp16
conversion, QDQ and dynamic quantization, the transformer optimizer's fusions).

A builder writes `<folder>/model.onnx` and returns the inputs to run it with. torch and
transformers are imported inside the builders, so listing the zoo needs neither."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx

OPSET = 17
SEED = 0


# The largest error a model may have against ORT's CPU EP on the CPU backend: max |EP - ORT| / max |ORT| over
# its outputs. float32 models stay near 1e-6 (summation order); the bound leaves room for other CPUs' kernels.
TOLERANCE = 1e-4
FP16_TOLERANCE = 1e-2  # float16 rounding of every intermediate: ~2e-3 seen
# ORT runs a QDQ model's residual Adds as QLinearAdd, which rounds once where the graph's DQ -> Add -> Q
# (what the EP computes) can land one quantization step apart; those steps compound over the layers:
# resnet50_qdq ends 7e-3 apart (0.79 on logits up to 114) while its Conv groups match ORT to the bit.
QDQ_TOLERANCE = 2e-2


@dataclass(frozen=True)
class Entry:
    name: str
    build: Callable[[Path], dict[str, np.ndarray]]
    note: str = ""  # how the model differs from the published full-size one
    tolerance: float = TOLERANCE  # on the CPU backend (TOLERANCE's comment)


def _export(module, args: tuple, names: list[str], dynamic: dict, path: Path) -> None:
    """TorchScript-based export (the exporter most models in the wild went through), in eval mode."""
    import torch

    module.eval()
    with torch.no_grad():  # an all-zero output (torchvision's ViT zero-initializes its head) matches anything
        for param in module.parameters():
            if not param.any():
                param.normal_(0.0, 0.02)
    # not under no_grad: there torch's MultiheadAttention takes a fused fast path the exporter cannot write
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tracer and deprecation warnings of the exporter
        torch.onnx.export(module, args, str(path), input_names=names, dynamic_axes=dynamic, opset_version=OPSET,
                          dynamo=False)


def _rng() -> np.random.Generator:
    return np.random.default_rng(SEED)


def _seed() -> None:
    import torch

    torch.manual_seed(SEED)


def _vision(factory: str, size: int = 224, **kwargs) -> Callable[[Path], dict[str, np.ndarray]]:
    def build(folder: Path) -> dict[str, np.ndarray]:
        import torch
        import torchvision

        _seed()
        module = getattr(torchvision.models, factory, None) or getattr(torchvision.models.segmentation, factory)
        model = module(weights=None, **kwargs)
        image = _rng().standard_normal((1, 3, size, size)).astype(np.float32)
        _export(model, (torch.from_numpy(image),), ["image"], {"image": {0: "batch"}}, folder / "model.onnx")
        return {"image": image}

    return build


class _Outputs:
    """Wraps a transformers model so that the export sees plain tensors (no ModelOutput, no cache)."""

    @staticmethod
    def wrap(model, names: list[str], keys: tuple[str, ...]):
        import torch

        class Wrapped(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.model = model

            def forward(self, *args):  # by keyword: GPT-2's second positional argument is the cache
                out = self.model(**dict(zip(names, args, strict=True)), return_dict=True)
                return tuple(out[k] for k in keys)

        return Wrapped()


def _text(kind: str, seq: int = 16, **config) -> Callable[[Path], dict[str, np.ndarray]]:
    """A transformers text encoder/decoder from its Config class; inputs input_ids and attention_mask."""

    def build(folder: Path) -> dict[str, np.ndarray]:
        import torch
        import transformers

        _seed()
        cfg = getattr(transformers, f"{kind}Config")(**config)
        cfg._attn_implementation = "eager"  # the exporter traces plain MatMul/Softmax attention
        model_cls = "T5EncoderModel" if kind == "T5" else f"{kind}Model"
        model = getattr(transformers, model_cls)(cfg)
        vocab = cfg.vocab_size
        ids = _rng().integers(0, vocab, (1, seq)).astype(np.int64)
        mask = np.ones((1, seq), np.int64)
        mask[0, seq - 3:] = 0  # padding at the end: the mask path is exercised
        names = ["input_ids", "attention_mask"]
        wrapped = _Outputs.wrap(model, names, ("last_hidden_state",))
        axes = {name: {0: "batch", 1: "seq"} for name in names}
        _export(wrapped, (torch.from_numpy(ids), torch.from_numpy(mask)), names, axes, folder / "model.onnx")
        return {"input_ids": ids, "attention_mask": mask}

    return build


def _whisper_encoder(folder: Path) -> dict[str, np.ndarray]:
    import torch
    import transformers

    _seed()
    cfg = transformers.WhisperConfig(d_model=64, encoder_layers=2, encoder_attention_heads=4, decoder_layers=1,
                                     decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128,
                                     num_mel_bins=80, max_source_positions=50)
    cfg._attn_implementation = "eager"
    encoder = transformers.WhisperModel(cfg).get_encoder()
    features = _rng().standard_normal((1, 80, 100)).astype(np.float32)  # 2 x max_source_positions frames
    _export(_Outputs.wrap(encoder, ["input_features"], ("last_hidden_state",)), (torch.from_numpy(features),),
            ["input_features"], {"input_features": {0: "batch"}}, folder / "model.onnx")
    return {"input_features": features}


def _clip_vision(folder: Path) -> dict[str, np.ndarray]:
    import torch
    import transformers

    _seed()
    cfg = transformers.CLIPVisionConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                        num_attention_heads=4, image_size=64, patch_size=16)
    cfg._attn_implementation = "eager"
    model = transformers.CLIPVisionModel(cfg)
    pixels = _rng().standard_normal((1, 3, 64, 64)).astype(np.float32)
    _export(_Outputs.wrap(model, ["pixel_values"], ("last_hidden_state", "pooler_output")),
            (torch.from_numpy(pixels),), ["pixel_values"], {"pixel_values": {0: "batch"}}, folder / "model.onnx")
    return {"pixel_values": pixels}


def _derived(base: str, transform: Callable[[Path, Path, dict], None]) -> Callable[[Path], dict[str, np.ndarray]]:
    """A model made from the zoo model `base` (built first, into its own folder beside this one)."""

    def build(folder: Path) -> dict[str, np.ndarray]:
        from .cache import built

        source, feeds = built(base, folder.parent)
        transform(source, folder / "model.onnx", feeds)
        return feeds

    return build


def _fp16(source: Path, target: Path, feeds: dict) -> None:
    from onnxruntime.transformers.float16 import convert_float_to_float16

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # it warns about values out of fp16's range, as it should
        model = convert_float_to_float16(onnx.load(str(source)), keep_io_types=False)
    onnx.save(model, str(target))


def _qdq(source: Path, target: Path, feeds: dict) -> None:
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    class RandomImages(CalibrationDataReader):
        def __init__(self):
            rng = _rng()
            self.batches = iter([{k: rng.standard_normal(v.shape).astype(v.dtype) for k, v in feeds.items()}
                                 for _ in range(4)])

        def get_next(self):
            return next(self.batches, None)

    # reduce_range (7-bit weights), as onnxruntime advises for x86 CPUs without VNNI: there its CPU EP, the
    # reference here, adds pairs of u8 x s8 products in int16 with saturation (vpmaddubsw), which moved
    # resnet50's full-range result 2.8% off on an AVX2-only machine
    quantize_static(str(source), str(target), RandomImages(), quant_format=QuantFormat.QDQ,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8, reduce_range=True)


def _dynamic(source: Path, target: Path, feeds: dict) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(str(source), str(target), weight_type=QuantType.QInt8)


def _fused_bert(source: Path, target: Path, feeds: dict) -> None:
    from onnxruntime.transformers.optimizer import optimize_model

    optimized = optimize_model(str(source), model_type="bert", num_heads=BERT["num_attention_heads"],
                               hidden_size=BERT["hidden_size"], opt_level=0)
    optimized.save_model_to_file(str(target))


# small transformer configs: the architectures in full, with fewer and narrower layers (2 cores here)
BERT = dict(hidden_size=128, num_hidden_layers=2, num_attention_heads=4, intermediate_size=512, vocab_size=1000)
SMALL_TEXT = "2 layers, hidden 128 (published: 12 layers, hidden 768)"

ZOO: dict[str, Entry] = {e.name: e for e in [
    Entry("resnet50", _vision("resnet50")),
    Entry("mobilenet_v3_small", _vision("mobilenet_v3_small")),
    Entry("efficientnet_b0", _vision("efficientnet_b0")),
    Entry("convnext_tiny", _vision("convnext_tiny")),
    Entry("vit_b_16", _vision("vit_b_16")),
    Entry("lraspp_mobilenet_v3", _vision("lraspp_mobilenet_v3_large", size=224, weights_backbone=None),
          "segmentation"),
    Entry("bert", _text("Bert", **BERT), SMALL_TEXT),
    Entry("distilbert", _text("DistilBert", dim=128, n_layers=2, n_heads=4, hidden_dim=512, vocab_size=1000),
          SMALL_TEXT),
    Entry("roberta", _text("Roberta", **BERT), SMALL_TEXT),
    Entry("gpt2", _text("GPT2", n_embd=128, n_layer=2, n_head=4, vocab_size=1000, bos_token_id=0, eos_token_id=0,
                        use_cache=False), SMALL_TEXT),
    Entry("t5_encoder", _text("T5", d_model=128, d_kv=32, d_ff=512, num_layers=2, num_heads=4, vocab_size=1000),
          SMALL_TEXT),
    Entry("whisper_encoder", _whisper_encoder, "2 layers, d_model 64, 100 frames"),
    Entry("clip_vision", _clip_vision, "2 layers, hidden 64, 64x64 image"),
    Entry("bert_fused", _derived("bert", _fused_bert), "ORT transformer optimizer, " + SMALL_TEXT),
    Entry("resnet50_fp16", _derived("resnet50", _fp16), tolerance=FP16_TOLERANCE),
    Entry("bert_fp16", _derived("bert", _fp16), SMALL_TEXT, tolerance=FP16_TOLERANCE),
    Entry("resnet50_qdq", _derived("resnet50", _qdq), "QDQ int8, random calibration", tolerance=QDQ_TOLERANCE),
    Entry("bert_dynamic_int8", _derived("bert", _dynamic), "dynamic int8, " + SMALL_TEXT),
]}
