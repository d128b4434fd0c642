"""The shapes real APIs have, as the ``openapi`` synthesizer reads them (issue 13, point 2)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from envkernel_openapi import OpenAPISettings, SpecError, synthesize_file

DOC = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "readOnly": True},
        "title": {"type": "string"},
        "text": {"type": "string"},
    },
    "required": ["id", "title"],
}
ALBUM = {
    "type": "object",
    "properties": {"id": {"type": "string"}, "name": {"type": "string"}},
    "required": ["id", "name"],
}


def _ok(schema: dict[str, Any]) -> dict[str, Any]:
    return {"200": {"description": "ok", "content": {"application/json": {"schema": schema}}}}


def _body(schema: dict[str, Any], media: str = "application/json") -> dict[str, Any]:
    return {"required": True, "content": {media: {"schema": schema}}}


def _write(tmp_path: Path, paths: dict[str, Any], name: str = "api.json") -> Path:
    doc = {
        "openapi": "3.1.0",
        "info": {"title": "shapes"},
        "paths": paths,
        "components": {"schemas": {"Document": DOC, "Album": ALBUM}},
    }
    f = tmp_path / name
    f.write_text(json.dumps(doc))
    return f


def _ops(path: Path, **settings: Any) -> tuple[dict[str, Any], Any]:
    env, _w = synthesize_file(path, settings=OpenAPISettings(validate=False, **settings))
    return env.behaviour.model["operations"], env


def test_owner_namespace_and_version_literals_before_a_collection(tmp_path: Path) -> None:
    ref = {"$ref": "#/components/schemas/Album"}
    ops, env = _ops(
        _write(
            tmp_path,
            {
                "/v1/me/albums": {
                    "get": {
                        "operationId": "listMyAlbums",
                        "responses": _ok(
                            {
                                "type": "object",
                                "properties": {
                                    "items": {"type": "array", "items": ref},
                                    "next": {"type": ["string", "null"]},
                                },
                            }
                        ),
                    }
                },
                "/v1/admin/albums/{id}": {
                    "get": {
                        "operationId": "getAlbum",
                        "parameters": [
                            {
                                "name": "id",
                                "in": "path",
                                "required": True,
                                "schema": {"type": "string"},
                            }
                        ],
                        "responses": _ok(ref),
                    }
                },
            },
        )
    )
    assert {(o["kind"], o["resource"]) for o in ops.values()} == {
        ("list", "albums"),
        ("get", "albums"),
    }
    assert env.operations == 2 and env.skipped == {}


def test_rpc_style_operations_get_their_kind_from_the_last_word(tmp_path: Path) -> None:
    doc = {"$ref": "#/components/schemas/Document"}
    data = {"type": "object", "properties": {"data": doc}}
    ops, env = _ops(
        _write(
            tmp_path,
            {
                "/documents.list": {
                    "post": {
                        "requestBody": _body(
                            {
                                "type": "object",
                                "properties": {
                                    "limit": {"type": "integer"},
                                    "offset": {"type": "integer"},
                                },
                            }
                        ),
                        "responses": _ok(
                            {
                                "type": "object",
                                "properties": {"data": {"type": "array", "items": doc}},
                            }
                        ),
                    }
                },
                "/documents.info": {
                    "post": {
                        "requestBody": _body(
                            {
                                "type": "object",
                                "properties": {"id": {"type": "string"}},
                                "required": ["id"],
                            }
                        ),
                        "responses": _ok(data),
                    }
                },
                "/documents.create": {
                    "post": {
                        "requestBody": _body(
                            {
                                "type": "object",
                                "properties": {
                                    "title": {"type": "string"},
                                    "text": {"type": "string"},
                                },
                                "required": ["title"],
                            }
                        ),
                        "responses": _ok(data),
                    }
                },
                "/documents/update": {
                    "post": {
                        "requestBody": _body(
                            {
                                "type": "object",
                                "properties": {
                                    "id": {"type": "string"},
                                    "text": {"type": "string"},
                                },
                                "required": ["id"],
                            },
                            "application/x-www-form-urlencoded",
                        ),
                        "responses": _ok(data),
                    }
                },
            },
        )
    )
    by_kind = {o["kind"]: o for o in ops.values()}
    assert set(by_kind) == {"list", "get", "create", "patch"} and {
        o["resource"] for o in ops.values()
    } == {"documents"}
    assert by_kind["get"]["key"] == "id" and by_kind["patch"]["key"] == "id"
    assert by_kind["list"]["page"] == {
        "limit": "limit",
        "default_limit": 20,
        "offset": "offset",
    }  # body arguments of a list call
    assert by_kind["patch"]["body"] == {"text": "text"}  # a form-encoded body is read like JSON


def test_jsonapi_attributes_become_fields(tmp_path: Path) -> None:
    item = {
        "type": "object",
        "properties": {
            "type": {"type": "string", "enum": ["list"]},
            "id": {"type": "string"},
            "attributes": {"type": "object", "properties": {"name": {"type": "string"}}},
        },
    }
    ops, env = _ops(
        _write(
            tmp_path,
            {
                "/lists": {
                    "get": {
                        "responses": _ok(
                            {
                                "type": "object",
                                "properties": {"data": {"type": "array", "items": item}},
                            }
                        )
                    }
                },
                "/lists/{id}/tags": {
                    "get": {
                        "parameters": [
                            {
                                "name": "id",
                                "in": "path",
                                "required": True,
                                "schema": {"type": "string"},
                            }
                        ],
                        "responses": _ok(
                            {
                                "type": "object",
                                "properties": {"data": {"type": "array", "items": item}},
                            }
                        ),
                    }
                },
            },
        )
    )
    assert "name" in env.behaviour.model["resources"]["lists"]["fields"]
    nested = next(o for o in ops.values() if o.get("parents"))
    assert nested["parents"][0]["arg"] == "list_id"  # a generic {id} names whose id it is


def test_max_tools_keeps_whole_listable_resources_and_counts_the_rest(tmp_path: Path) -> None:
    ref = {"$ref": "#/components/schemas/Album"}
    pid = [{"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}]
    paths = {
        "/albums": {"get": {"responses": _ok({"type": "array", "items": ref})}},
        "/albums/{id}": {
            "get": {"parameters": pid, "responses": _ok(ref)},
            "delete": {"parameters": pid, "responses": {"204": {"description": "gone"}}},
        },
        "/photos/{id}": {"get": {"parameters": pid, "responses": _ok(ref)}},
    }
    ops, env = _ops(_write(tmp_path, paths), max_tools=3)
    assert {o["resource"] for o in ops.values()} == {"albums"} and len(ops) == 3
    assert env.operations == 4 and env.skipped == {"more tools than max_tools = N": 1}


def test_no_list_operation_is_refused_saying_why(tmp_path: Path) -> None:
    pid = [{"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}]
    f = _write(
        tmp_path,
        {
            "/albums/{id}": {
                "get": {"parameters": pid, "responses": _ok({"$ref": "#/components/schemas/Album"})}
            }
        },
    )
    with pytest.raises(
        SpecError,
        match="no list operation could be made, so the ids of its albums could not be discovered",
    ):
        synthesize_file(f, settings=OpenAPISettings(validate=False))


def test_relative_file_refs_resolve_and_x_extensions_are_left_alone(tmp_path: Path) -> None:
    (tmp_path / "schemas.yaml").write_text(
        "Album:\n  type: object\n  properties: {id: {type: string}, name: {type: string}}\n  "
        "required: [id, name]\n"
    )
    (tmp_path / "api.yaml").write_text(
        "openapi: 3.0.3\ninfo: {title: files}\npaths:\n  /albums:\n    get:\n      "
        "x-codeSamples: [{lang: sh, source: {$ref: ./samples/missing.md}}]\n      responses: "
        "{200: {description: ok, content: {application/json: {schema: {type: array, items: "
        "{$ref: './schemas.yaml#/Album'}}}}}}\n"
    )
    ops, env = _ops(tmp_path / "api.yaml")
    assert env.behaviour.model["resources"]["albums"]["fields"]["name"]["type"] == "string"
    assert [o["kind"] for o in ops.values()] == ["list"]
