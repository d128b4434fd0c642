"""The second half of the real-spec corpus (``REAL_HALVES`` in ``conftest.py``) through the
synthesizer and the ``probe`` verifier, and the quirks of real specs the loader reads (see
``test_openapi_realspecs.py`` for the first half; the two files let the suite's two workers share
the work).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from envkernel_openapi.spec import load, load_text

pytest.importorskip("envkernel_process")
pytestmark = pytest.mark.timeout(
    1200
)  # one synthesis and verification of 16 real specs, on 2 shared cores

CORPUS = Path(__file__).resolve().parents[1] / "plugins" / "openapi" / "corpus-real"
REAL_HALF = 1
"""This module verifies the second half of the corpus (``real_corpus``)."""
KEPT_FLOOR = 13
"""Environments the verifier keeps, of this half's 16 specs (see
``test_openapi_realspecs.KEPT_FLOOR``)."""


def test_real_specs_synthesize_and_verify_without_a_traceback(
    real_corpus: Any, check_real_corpus: Any
) -> None:
    check_real_corpus(real_corpus, kept_floor=KEPT_FLOOR, refused_at_most=1)


def test_quirks_of_real_specs_are_read() -> None:
    # a $ref to a Markdown file inside x-codeSamples / a tag description does not refuse the spec
    doc, _ = load(CORPUS / "dropbox-sign-api" / "openapi.yaml", validate=False)
    assert len(doc["paths"]) > 30
    # the whole `paths` is one $ref to another file
    doc, _ = load(CORPUS / "google-maps-platform" / "index.yml", validate=False)
    assert any(p.startswith("/") for p in doc["paths"])
    # SendGrid: each component map is one $ref to a whole file
    doc, _ = load(CORPUS / "sendgrid-v3" / "oas_v3.json", validate=False)
    assert len(doc["components"]["schemas"]) > 50
    # Asana's unquoted integer response codes become strings; the validator's findings are warnings
    doc, warnings = load(CORPUS / "xero-accounting.yaml")
    assert any("validator" in w for w in warnings) and doc["paths"]
    doc, _ = load(CORPUS / "asana-api.yaml", validate=False)
    assert all(
        isinstance(c, str)
        for item in doc["paths"].values()
        for op in item.values()
        if isinstance(op, dict)
        for c in op.get("responses", {})
    )
    # Mollie's impossible date in an example (2024-04-31) stays a string instead of breaking YAML
    doc, _ = load_text(
        "openapi: 3.0.0\ninfo: {title: x}\npaths:\n  /a: {get: {responses: {200: "
        "{description: ok, x-when: 2024-04-31T12:50:14+00:00}}}}\n",
        "m.yaml",
    )
    assert doc["paths"]["/a"]["get"]["responses"]["200"]["x-when"] == "2024-04-31T12:50:14+00:00"
    # Swagger 2.0 is converted (test_openapi_realkeys.py checks the refusal without a converter)
    doc, warnings = load(CORPUS / "slack-web-api.json", validate=False)
    assert doc["openapi"].startswith("3.0") and any("converted" in w for w in warnings)
