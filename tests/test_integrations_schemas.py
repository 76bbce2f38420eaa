"""Tool schemas that outside clients take unchanged: verl's `OpenAIFunctionToolSchema`,
JSON-Schema validation of every reference call, and TRL's `get_json_schema` derivation of the
TRL environment's tools."""

from __future__ import annotations

import jsonschema
import pytest

from ecomrlve.env.shop.tools import TOOL_NAMES, SearchFilters, tool_schemas
from ecomrlve.testing import env_tasks as fx


@pytest.fixture(scope="module")
def schemas() -> dict[str, dict]:
    return {s["function"]["name"]: s for s in tool_schemas()}


def test_verl_tool_schema_class_accepts_every_schema(schemas) -> None:
    from verl.tools.schemas import OpenAIFunctionToolSchema

    for name, schema in schemas.items():
        parsed = OpenAIFunctionToolSchema.model_validate(schema)
        params = schema["function"]["parameters"]
        assert parsed.function.name == name
        assert parsed.function.parameters.required == params["required"]
        # what verl models of each property (type, description) is ours, unchanged
        for prop, spec in params["properties"].items():
            modelled = parsed.function.parameters.properties[prop]
            assert modelled.type == spec["type"] and modelled.description == spec["description"]


def test_every_schema_has_required_and_keeps_nested_properties(schemas) -> None:
    assert list(schemas) == list(TOOL_NAMES)
    for schema in schemas.values():
        params = schema["function"]["parameters"]
        assert isinstance(params["required"], list)
        jsonschema.Draft202012Validator.check_schema(params)
    filters = schemas["search"]["function"]["parameters"]["properties"]["filters"]
    assert set(filters["properties"]) == set(SearchFilters.model_fields)
    assert filters["additionalProperties"] is False
    item_ids = schemas["recommend"]["function"]["parameters"]["properties"]["item_ids"]
    assert item_ids["items"] == {"type": "string"}
    quantity = schemas["add_to_cart"]["function"]["parameters"]["properties"]["quantity"]
    assert quantity["default"] == 1


def test_reference_calls_validate_against_the_schemas(schemas) -> None:
    calls = [call for task in fx.all_tasks() for call in task.reference]
    assert {c.name for c in calls} >= {"search", "add_to_cart", "checkout", "recommend"}
    for call in calls:
        params = schemas[call.name]["function"]["parameters"]
        jsonschema.validate(call.arguments, params)
    bad = {"query": "x", "filters": {"colour": "red"}}  # misspelt filter: rejected
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schemas["search"]["function"]["parameters"])
