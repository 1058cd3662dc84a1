"""SHA-256 length extension, for forging SHA-256(secret || data) tags without the secret (the attack
test_trust.py shows the EP's tags resist; test_trust_crypto.py checks the helper itself)."""

from __future__ import annotations

import struct

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
