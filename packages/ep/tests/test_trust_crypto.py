"""The cryptography under the EP's trust checks: the plugin's HMAC-SHA256 (sha256.cc) against
RFC 4231, and the length-extension helper the trust tests forge tags with."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest
from sha256_forge import length_extend

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
    assert digest == hashlib.sha256(data).hexdigest()
    assert (equal_self, equal_other) == ("1", "0")


def test_length_extension_helper_forges_plain_sha256() -> None:
    """The attack below is real: it forges SHA-256(secret || data') without the secret."""
    secret, data = b"k" * 64, b"\x7fELF original code"
    forged, tag = length_extend(hashlib.sha256(secret + data).hexdigest(), 64, data, b"appended")
    assert forged.endswith(b"appended") and tag == hashlib.sha256(secret + forged).hexdigest()
