"""The serving process loads what the first requests would wait for before it accepts them (config.warmup)."""

import logging

from config import warmup
from core import secrets, stores


def test_warm_up_loads_every_model_and_says_how_long_each_step_took(caplog):
    secrets._format_patterns.cache_clear()
    with caplog.at_level(logging.INFO, logger="mnemo.warmup"):
        took = warmup.warm_up()
    assert set(took) == {
        "models",
        "jieba and spaCy",
        "write checks",
        "vector collections",
        "templates, URLs and translations",
    }
    # Every embedding model has loaded its weights: the first search embeds nothing cold.
    for embedder in stores.embedding_set().spaces.values():
        assert any(getattr(embedder, attr, None) is not None for attr in ("_loaded", "_model", "_engines"))
    # The secret scanner's patterns are compiled: the first add does not pay for them (110 ms without).
    assert secrets._format_patterns.cache_info().currsize == 1
    assert "Warmed up in" in caplog.text


def test_a_step_that_fails_is_logged_and_the_others_still_run(monkeypatch, caplog):
    ran = []

    def broken():
        raise RuntimeError("graph server down")

    monkeypatch.setattr(warmup, "STEPS", {"broken": broken, "after": lambda: ran.append("after")})
    with caplog.at_level(logging.INFO, logger="mnemo.warmup"):
        took = warmup.warm_up()
    assert ran == ["after"] and set(took) == {"broken", "after"}
    assert "warm-up: broken failed" in caplog.text
