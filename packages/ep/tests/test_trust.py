"""Trust boundaries: the EP runs only native code that this install produced
or that the user explicitly trusted, and verifies it before loading it."""

from __future__ import annotations

import json
import struct
import subprocess
from pathlib import Path

import numpy as np
import onnx
import pytest
from conftest import NO_FALLBACK, Env, make_session
from models import elementwise, reference

SRC = Path(__file__).resolve().parents[1] / "src"
SUPPORT = Path(__file__).resolve().parent / "support"

# RFC 4231, test cases 1-4, 6 and 7 (case 5 checks a truncated output): (key, data, HMAC-SHA256).
RFC4231 = [
    (b"\x0b" * 20, b"Hi There", "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"),
    (b"Jefe", b"what do ya want for nothing?", "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
    (b"\xaa" * 20, b"\xdd" * 50, "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"),
    (bytes(range(1, 26)), b"\xcd" * 50, "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"),
    (b"\xaa" * 131, b"Test Using Larger Than Block-Size Key - Hash Key First",
     "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"),
    (b"\xaa" * 131, b"This is a test using a larger than block-size key and a larger than block-size data. The key "
     b"needs to be hashed before being used by the HMAC algorithm.",
     "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"),
]


@pytest.fixture(scope="module")
def hmac_check(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """support/hmac_check.cc built against the plugin's own sha256.cc."""
    exe = tmp_path_factory.mktemp("hmac") / "hmac_check"
    subprocess.run(["c++", "-std=c++17", "-O1", f"-I{SRC}", "-o", str(exe), str(SUPPORT / "hmac_check.cc"),
                    str(SRC / "sha256.cc")], check=True)
    return exe


@pytest.mark.parametrize("case", range(len(RFC4231)), ids=[f"rfc4231-{i}" for i in (1, 2, 3, 4, 6, 7)])
def test_hmac_sha256_matches_rfc4231(hmac_check: Path, case: int) -> None:
    key, data, expected = RFC4231[case]
    out = subprocess.run([str(hmac_check), key.hex(), data.hex()], check=True, capture_output=True, text=True)
    mac, digest, equal_self, equal_other = out.stdout.split()
    assert mac == expected
    assert digest == __import__("hashlib").sha256(data).hexdigest()
    assert (equal_self, equal_other) == ("1", "0")


# ---- SHA-256 length extension, for forging SHA-256(secret || data) tags without the secret ----

_K = [int(x, 16) for x in """
428a2f98 71374491 b5c0fbcf e9b5dba5 3956c25b 59f111f1 923f82a4 ab1c5ed5 d807aa98 12835b01 243185be 550c7dc3
72be5d74 80deb1fe 9bdc06a7 c19bf174 e49b69c1 efbe4786 0fc19dc6 240ca1cc 2de92c6f 4a7484aa 5cb0a9dc 76f988da
983e5152 a831c66d b00327c8 bf597fc7 c6e00bf3 d5a79147 06ca6351 14292967 27b70a85 2e1b2138 4d2c6dfc 53380d13
650a7354 766a0abb 81c2c92e 92722c85 a2bfe8a1 a81a664b c24b8b70 c76c51a3 d192e819 d6990624 f40e3585 106aa070
19a4c116 1e376c08 2748774c 34b0bcb5 391c0cb3 4ed8aa4a 5b9cca4f 682e6ff3 748f82ee 78a5636f 84c87814 8cc70208
90befffa a4506ceb bef9a3f7 c67178f2""".split()]


def _compress(state: list[int], block: bytes) -> list[int]:
    def rotr(x: int, n: int) -> int:
        return ((x >> n) | (x << (32 - n))) & 0xFFFFFFFF

    w = list(struct.unpack(">16I", block))
    for i in range(16, 64):
        s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3)
        s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10)
        w.append((w[i - 16] + s0 + w[i - 7] + s1) & 0xFFFFFFFF)
    a, b, c, d, e, f, g, h = state
    for i in range(64):
        t1 = (h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + _K[i] + w[i]) & 0xFFFFFFFF
        t2 = ((rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c))) & 0xFFFFFFFF
        a, b, c, d, e, f, g, h = (t1 + t2) & 0xFFFFFFFF, a, b, c, (d + t1) & 0xFFFFFFFF, e, f, g
    return [(x + y) & 0xFFFFFFFF for x, y in zip(state, [a, b, c, d, e, f, g, h], strict=True)]


def _padding(length: int) -> bytes:
    return b"\x80" + b"\0" * ((55 - length) % 64) + struct.pack(">Q", length * 8)


def length_extend(tag_hex: str, secret_len: int, data: bytes, suffix: bytes) -> tuple[bytes, str]:
    """From tag = SHA-256(secret || data) alone: (data', SHA-256(secret || data')) with data' ending in suffix."""
    glue = _padding(secret_len + len(data))
    forged = data + glue + suffix
    state = list(struct.unpack(">8I", bytes.fromhex(tag_hex)))
    tail = suffix + _padding(secret_len + len(forged))
    for i in range(0, len(tail), 64):
        state = _compress(state, tail[i:i + 64])
    return forged, struct.pack(">8I", *state).hex()


def test_length_extension_helper_forges_plain_sha256() -> None:
    """The attack below is real: it forges SHA-256(secret || data') without the secret."""
    import hashlib

    secret, data = b"k" * 64, b"\x7fELF original code"
    forged, tag = length_extend(hashlib.sha256(secret + data).hexdigest(), 64, data, b"appended")
    assert forged.endswith(b"appended") and tag == hashlib.sha256(secret + forged).hexdigest()


def _context_node(model: onnx.ModelProto) -> onnx.NodeProto:
    (node,) = [n for n in model.graph.node if n.op_type == "EPContext"]
    return node


def _attr(node: onnx.NodeProto, name: str) -> onnx.AttributeProto:
    (attr,) = [a for a in node.attribute if a.name == name]
    return attr


def compile_ctx(tmp_path: Path, devices, env: Env, embed: bool, name: str = "m") -> Path:
    model = elementwise(tmp_path / f"{name}.onnx", ["n", 4])
    out = tmp_path / f"{name}_ctx.onnx"
    make_session(model, devices, env.options, dict(NO_FALLBACK, **{
        "ep.context_enable": "1", "ep.context_file_path": str(out), "ep.context_embed_mode": "1" if embed else "0"}))
    return out


def _runs(sess) -> None:
    x = np.ones((2, 4), np.float32)
    np.testing.assert_allclose(sess.run(None, {"x": x, "y": x})[0], reference(x, x))


def test_length_extended_tag_is_refused(tmp_path: Path, ep_devices, env: Env) -> None:
    """Issue 7, defect 3: with tag = SHA-256(key || code), appending bytes to the code gave a valid tag
    without the key, and the install ran the modified code without trust_ep_context_code."""
    ctx = compile_ctx(tmp_path, ep_devices, env, embed=True)
    model = onnx.load(str(ctx))
    node = _context_node(model)
    code = _attr(node, "ep_cache_context").s
    notes = json.loads(_attr(node, "notes").s)
    tag = notes["tag"].rpartition(":")[2]
    forged, forged_tag = length_extend(tag, 64, code, b"code the install never produced")
    _attr(node, "ep_cache_context").s = forged
    notes["tag"] = forged_tag
    _attr(node, "notes").s = json.dumps(notes).encode()
    onnx.save(model, str(tmp_path / "forged.onnx"))
    with pytest.raises(Exception, match="did not produce.*trust_ep_context_code=1"):
        make_session(tmp_path / "forged.onnx", ep_devices, env.options, NO_FALLBACK)
    _runs(make_session(ctx, ep_devices, env.options, NO_FALLBACK))  # the genuine model still runs
