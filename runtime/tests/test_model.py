"""The typed resource model: it encodes to the JSON the engine reads, carries nouns, and one
``executor_path`` finds the sandbox programs."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest

from envkernel_runtime import engine_path, executor_path
from envkernel_runtime.model import Nouns, ResourceModel, model_of

openapi = pytest.importorskip("envkernel_openapi")

# defaults the engine applies to a missing key itself (so leaving them out changes nothing)
ENGINE_DEFAULTS = {"op": "eq", "engine": 1}


def _norm(x: Any, parent: dict[str, Any] | None = None) -> Any:
    if isinstance(x, dict):
        return {
            k: _norm(v, x)
            for k, v in x.items()
            if v not in (None, False, [], {}, "")
            and ENGINE_DEFAULTS.get(k, object()) != v
            and not (k == "key" and v == "id" and "fields" in x)
        }
    if isinstance(x, list):
        return [_norm(v) for v in x]
    return x


def _corpus_models() -> list[tuple[str, dict[str, Any]]]:
    return [(f.stem, openapi.synthesize_file(f)[0].behaviour.model) for f in openapi.corpus_files()]


def test_the_typed_model_round_trips_to_the_engines_json() -> None:
    for name, data in _corpus_models():
        typed = ResourceModel.from_json(data)
        assert _norm(typed.to_json()) == _norm(data), name


def test_every_resource_carries_its_nouns() -> None:
    for name, data in _corpus_models():
        typed = ResourceModel.from_json(data)
        for table, res in typed.resources.items():
            assert (
                res.nouns is not None
                and res.nouns.singular
                and res.nouns.plural
                and res.nouns.label
            ), (name, table)
    shop = ResourceModel.from_json(dict(_corpus_models())["shop"])
    assert {
        t: (n.nouns.singular, n.nouns.plural) for t, n in shop.resources.items() if n.nouns
    }.get("orders") == ("order", "orders")


def test_nouns_fall_back_to_the_name_without_guessing() -> None:
    typed = ResourceModel.from_json(
        {"resources": {"sizes": {"fields": {"id": {"type": "string"}}}}, "operations": {}}
    )
    assert typed.nouns("sizes") == Nouns(singular="sizes", plural="sizes", label="sizes")


def test_model_of_reads_only_model_environments() -> None:
    from envkernel_sample import shop_env

    assert model_of(shop_env()) is None
    env = openapi.synthesize_file(next(f for f in openapi.corpus_files() if f.stem == "shop"))[0]
    assert model_of(env) is not None and model_of(env).resources


def test_the_engine_names_rows_with_the_models_nouns() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("engine_under_test", engine_path())
    engine = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(engine)  # type: ignore[union-attr]
    res = engine._Resource(
        "order_items",
        {
            "fields": {"id": {"type": "string"}},
            "nouns": {"singular": "order_item", "plural": "order_items", "label": "line item"},
        },
    )
    assert res.noun == "line item"
    assert engine._Resource("sizes", {"fields": {"id": {"type": "string"}}}).noun == "sizes"


def test_one_executor_path_for_every_runner() -> None:
    assert os.path.isfile(executor_path()) and os.path.dirname(engine_path()) == os.path.dirname(
        executor_path()
    )
    out = subprocess.run(
        [sys.executable, "-S", "-P", executor_path(), "--help"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 0 and "executor" in (out.stdout + out.stderr).lower()
