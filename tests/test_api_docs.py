"""The OpenAPI document behind /api/v1/docs: Swagger UI reads it with a YAML parser that refuses a key twice."""

import json

import pytest

pytestmark = pytest.mark.django_db


def test_the_openapi_document_holds_no_key_twice(client):
    repeated: list[list[str]] = []

    def keep(pairs: list[tuple[str, object]]) -> dict:
        keys = [key for key, _ in pairs]
        if len(keys) != len(set(keys)):
            repeated.append(sorted({key for key in keys if keys.count(key) > 1}))
        return dict(pairs)

    response = client.get("/api/v1/openapi.json")
    schema = json.loads(response.content, object_pairs_hook=keep)
    assert response.status_code == 200
    assert repeated == []
    memory = schema["paths"]["/api/v1/memories/{memory_id}"]["get"]["responses"]
    assert {"200", "401", "404"} <= set(memory)
