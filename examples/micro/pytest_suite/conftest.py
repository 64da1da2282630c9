"""Fixtures of the pytest-benchmark suite over the known-work package (docs/pytest.md)."""

import knownver
import pytest


@pytest.fixture(scope="session")
def steps():
    """The loop steps of every function of this side's knownver (a session fixture)."""
    return dict(knownver.WORK)


@pytest.fixture
def known(steps):
    """The function of a name, checked against its step count (a fixture using another)."""

    def get(name):
        fn = getattr(knownver, name)
        assert fn.steps == steps[name]
        return fn

    return get
