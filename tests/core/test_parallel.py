"""The test groups of ``--dist loadgroup`` (tests/conftest.py) take effect under pytest-xdist.

pytest-xdist 3.8 marks a grouped test by appending ``@group`` to its id, which its scheduler reads;
pytest 9 no longer lets a plugin change an id, so every group silently falls apart and a chapter's
smoke run is repeated on each worker that gets one of its tests. This fails if that happens again.
"""

from __future__ import annotations

import os

import pytest


@pytest.mark.xdist_group("probe")
def test_a_grouped_test_carries_its_group_under_xdist(request):
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        pytest.skip("not run by pytest-xdist (pytest -n)")
    if request.config.getoption("dist", None) not in (None, "no") or not getattr(
        request.config.option, "loadgroup", False
    ):
        pytest.skip("not run with --dist loadgroup")
    assert request.node.nodeid.endswith("@probe"), (
        f"the xdist group is missing from {request.node.nodeid!r}: --dist loadgroup has no effect "
        "with this pytest and pytest-xdist (see requirements.txt)"
    )
