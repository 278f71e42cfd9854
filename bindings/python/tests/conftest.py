"""Fixtures shared by the single-process test files (test_bindings.py, test_communicator.py).

sparsecoll is imported inside the fixture, not at the top: pytest loads this file for every test
file of the folder, and test_wheel_install.py and test_doc_recipes.py run without the checkout's
package or library on the path (a top-level import would fail them before they start)."""

import pytest


@pytest.fixture
def comm():
    """A one-rank communicator (transport "local"), destroyed after the test."""
    import sparsecoll
    with sparsecoll.Communicator.from_unique_id(sparsecoll.get_unique_id(), 0, 1) as c:
        yield c
