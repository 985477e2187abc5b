"""Argument validation: a call with bad arguments never reaches the tool."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from agentik_jupyter.tools.validation import check_call, type_matches, validate_arguments
from agentik_jupyter.types import ToolCall, ToolDefinition, ToolParameter

ASSET = [ToolParameter(key="assetId", type="string", required=False)]


def test_missing_but_optional_passes() -> None:
    assert validate_arguments({}, ASSET) == []


def test_wrong_type_names_the_argument() -> None:
    problems = validate_arguments({"assetId": 123}, ASSET)
    assert len(problems) == 1 and "assetId" in problems[0] and "string" in problems[0]


def test_missing_required_and_unexpected() -> None:
    params = [ToolParameter(key="name", type="string")]
    assert any("missing required argument 'name'" in p for p in validate_arguments({}, params))
    assert any("unexpected argument 'nmae'" in p for p in validate_arguments({"name": "a", "nmae": 1}, params))


def test_enum_and_non_object_arguments() -> None:
    params = [ToolParameter(key="mode", type="string", enum=["a", "b"])]
    assert "one of" in validate_arguments({"mode": "c"}, params)[0]
    assert "JSON object" in validate_arguments(["x"], params)[0]


def test_check_call_unknown_tool_and_bad_json() -> None:
    call = ToolCall(id="1", name="nope", args={})
    r = check_call(call, None)
    assert r is not None and r.error is not None and "Unknown tool 'nope'" in r.error
    d = ToolDefinition(name="t", parameters=ASSET, execute=lambda **k: None)
    r2 = check_call(ToolCall(id="2", name="t"), d, parse_error="Expecting value")
    assert r2 is not None and r2.error is not None and "not valid JSON" in r2.error
    assert check_call(ToolCall(id="3", name="t", args={"assetId": "a"}), d) is None


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=3), children, max_size=3),
    max_leaves=5,
)
ptypes = st.sampled_from(["string", "integer", "number", "boolean", "array", "object"])


@st.composite
def params_and_args(draw: Any) -> tuple[list[ToolParameter], dict[str, Any]]:
    keys = draw(st.lists(st.from_regex(r"[a-z]{1,6}", fullmatch=True), unique=True, max_size=5))
    params = [ToolParameter(key=k, type=draw(ptypes), required=draw(st.booleans())) for k in keys]
    args = {k: draw(json_values) for k in keys if draw(st.booleans())}
    return params, args


@given(params_and_args())
def test_valid_exactly_when_every_rule_holds(case: tuple[list[ToolParameter], dict[str, Any]]) -> None:
    params, args = case
    expected_ok = all(p.key in args for p in params if p.required) and all(
        (v is None and not p.required) or type_matches(v, p.type)
        for p in params
        if (v := args.get(p.key, ...)) is not ...
    )
    assert (validate_arguments(args, params) == []) == expected_ok


@given(params_and_args())
def test_every_problem_names_an_argument(case: tuple[list[ToolParameter], dict[str, Any]]) -> None:
    params, args = case
    for problem in validate_arguments(args, params):
        assert any(f"'{p.key}'" in problem for p in params)


@given(st.dictionaries(st.from_regex(r"[a-z]{1,4}", fullmatch=True), json_values, min_size=1, max_size=3))
def test_undeclared_arguments_always_fail(args: dict[str, Any]) -> None:
    problems = validate_arguments(args, [])
    assert len(problems) == len(args) and all("unexpected argument" in p for p in problems)


@given(st.booleans())
def test_booleans_are_not_numbers(value: bool) -> None:
    assert not type_matches(value, "integer") and not type_matches(value, "number")


def test_union_parameters_accept_each_alternative() -> None:
    from agentik_jupyter.tools.registry import ToolRegistry, tool

    reg = ToolRegistry()

    @tool(registry=reg)
    def pick(key: int | str, limit: float | None = None) -> str:
        return str(key)

    params = reg.get("pick").parameters  # type: ignore[union-attr]
    assert validate_arguments({"key": 3}, params) == []
    assert validate_arguments({"key": "a", "limit": None}, params) == []
    problems = validate_arguments({"key": [1]}, params)
    assert len(problems) == 1 and "'key'" in problems[0] and "an integer or a string" in problems[0]


def test_schema_type_lists_from_mcp_are_honoured() -> None:
    p = ToolParameter(key="v", type="string", json_schema={"type": ["string", "null", "number"]})
    assert validate_arguments({"v": 2.5}, [p]) == [] and validate_arguments({"v": None}, [p]) == []
    assert validate_arguments({"v": True}, [p]) != []
    anything = ToolParameter(key="w", type="string", json_schema={"anyOf": [{"type": "string"}, {"$ref": "#/x"}]})
    assert validate_arguments({"w": {"a": 1}}, [anything]) == []
