"""The optional extras CI promises to test with are really installed there.

CI sets ``KANON_REQUIRE_EXTRAS`` (e.g. ``sklearn,matplotlib,pycanon,pyspark``); the tests of those
features skip with a message only where a package is truly absent, and this test fails in CI if one
is absent, so a feature cannot go untested there while CI stays green.
"""
import importlib
import os

import pytest

REQUIRED = [m for m in os.environ.get("KANON_REQUIRE_EXTRAS", "").split(",") if m]


@pytest.mark.skipif(not REQUIRED, reason="KANON_REQUIRE_EXTRAS is not set (only CI requires extras)")
@pytest.mark.parametrize("module", REQUIRED or ["-"])
def test_required_extra_is_importable(module):
    importlib.import_module(module)
