"""The artifact format ([artifact]): declared once in the manifest, generated into the header and the
JSON that the compiler, the runtime and the EP read, and held to the bump rules."""

from __future__ import annotations

import re

import pytest
from hipdnn_ep_abi import ManifestError, compat, generate, parse


def _with(text: str, **fields) -> str:
    for key, value in fields.items():
        text, n = re.subn(rf"(?m)^{key} = .*$", f"{key} = {value}", text, count=1)
        assert n == 1, key
    return text


def test_declared_once_and_generated_everywhere(manifest):
    a = manifest.artifact
    assert (a.file, a.section) == ("program.so", ".hipdnn_ep_meta") and 1 <= a.oldest_format <= a.format
    header = generate.header(manifest)
    for line in ('#define HIPDNN_EP_ARTIFACT_FILE "program.so"', '#define HIPDNN_EP_ARTIFACT_SECTION ".hipdnn_ep_meta"',
                 f"#define HIPDNN_EP_ARTIFACT_FORMAT {a.format}", f"#define HIPDNN_EP_ARTIFACT_OLDEST_FORMAT "
                 f"{a.oldest_format}"):
        assert line in header
    assert generate.manifest_json(manifest)["artifact"] == {"file": a.file, "section": a.section,
                                                            "format": a.format, "oldest_format": a.oldest_format}


@pytest.mark.parametrize(("fields", "message"), [
    ({"oldest_format": 3}, "oldest_format <= format"),
    ({"file": '"lib/program.so"'}, "plain *.so name"),
    ({"section": '"hipdnn_ep_meta"'}, "start with '.'"),
])
def test_malformed_declarations_are_refused(manifest_text, fields, message):
    with pytest.raises(ManifestError, match=re.escape(message)):
        parse(_with(manifest_text, **fields))


@pytest.mark.parametrize(("fields", "message"), [
    ({"oldest_format": 2, "format": 2}, "oldest_format raised from 1 to 2"),
    ({"file": '"code.so"'}, "file changed"),
    ({"section": '".meta"'}, "section changed"),
])
def test_bump_rules_keep_every_released_format_readable(manifest, manifest_text, fields, message):
    violations = compat.check(manifest, parse(_with(manifest_text, **fields)))
    assert any(v.name == "[artifact]" and message in v.message for v in violations), violations


def test_a_newer_format_read_beside_the_old_ones_is_compatible(manifest, manifest_text):
    assert compat.check(manifest, parse(_with(manifest_text, format=manifest.artifact.format + 1))) == []
    newer = parse(_with(manifest_text, format=manifest.artifact.format + 1))
    assert any("format went back" in v.message for v in compat.check(newer, manifest))


def test_a_manifest_released_before_the_declaration_read_format_1(manifest, manifest_text):
    before = parse(re.sub(r"(?ms)^\[artifact\]\n.*?(?=^#|^\[)", "", manifest_text, count=1))
    assert before.artifact is None
    assert compat.check(before, manifest) == []
    assert [v.message for v in compat.check(manifest, before)] == [
        "the artifact format declaration was removed: restore it"]
