"""`collection_paused`: the collector is off inside, and afterwards as the caller had it."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from sessionstore.events._gc import collection_paused


@pytest.fixture(autouse=True)
def _restore_collector() -> Iterator[None]:
    was_enabled = gc.isenabled()
    yield
    if was_enabled:
        gc.enable()
    else:  # pragma: no cover - pytest runs with the collector on
        gc.disable()


def test_the_collector_is_off_inside_and_on_again_after() -> None:
    gc.enable()
    with collection_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_nested_pause_leaves_it_to_the_outermost() -> None:
    gc.enable()
    with collection_paused():
        with collection_paused():
            pass
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_collector_the_caller_turned_off_stays_off() -> None:
    gc.disable()
    with collection_paused():
        pass
    assert not gc.isenabled()


def test_an_error_inside_turns_it_back_on() -> None:
    gc.enable()

    @collection_paused()
    def failing() -> None:
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        failing()
    assert gc.isenabled()
