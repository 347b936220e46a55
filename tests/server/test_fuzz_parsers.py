"""Property tests (hypothesis) over what parses untrusted input on the server: the WS event
parser (`parse_json_object` + `parse_create`), the HTTP request model (`parse_chat_request`)
and gRPC request validation (`turn_request`). Whatever arrives, the result is a request or an
`ApiError` in OpenAI's shape (4xx, a message, a param or code), never another exception."""

from __future__ import annotations

import json
import math

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from turnspec.server.errors import ApiError
from turnspec.server.proto.turnspec.v1 import generation_pb2 as pb
from turnspec.server.session import TurnRequest
from turnspec.server.transports.grpc_generation import turn_request
from turnspec.server.transports.openai_chat import parse_chat_request
from turnspec.server.transports.ws_responses import parse_create
from turnspec.server.wire import parse_json_object

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=20),
                    st.floats(allow_nan=True, allow_infinity=True))
json_values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=20)
ROLES = st.sampled_from(["system", "user", "assistant", "tool", "developer", "", "x"])
message = st.fixed_dictionaries({}, optional={
    "role": st.one_of(ROLES, json_values), "content": json_values,
    "type": st.one_of(st.sampled_from(["message", "function_call", "function_call_output",
                                       "input_text"]), json_values),
    "tool_calls": json_values, "tool_call_id": json_values, "call_id": json_values,
    "output": json_values, "name": json_values, "arguments": json_values})
tool = st.one_of(json_values, st.fixed_dictionaries({"type": st.just("function")}, optional={
    "function": st.fixed_dictionaries({}, optional={"name": json_values, "parameters":
                                                    json_values, "description": json_values}),
    "name": json_values, "parameters": json_values}))
CREATE_KEYS = {"input": st.one_of(st.text(max_size=30), st.lists(message, max_size=4),
                                  json_values),
               "tools": st.one_of(st.lists(tool, max_size=3), json_values),
               "tool_choice": json_values, "instructions": json_values,
               "previous_response_id": json_values, "temperature": json_values,
               "top_p": json_values, "max_output_tokens": json_values,
               "spec_block_size": json_values, "metadata": json_values, "model": json_values,
               "generate": json_values}
CHAT_KEYS = {"messages": st.one_of(st.lists(message, max_size=4), json_values),
             "tools": st.one_of(st.lists(tool, max_size=3), json_values),
             "tool_choice": json_values, "temperature": json_values, "top_p": json_values,
             "top_k": json_values, "seed": json_values, "max_tokens": json_values,
             "max_completion_tokens": json_values, "stop": json_values, "n": json_values,
             "stream": json_values, "stream_options": json_values,
             "request_id": json_values, "spec_block_size": json_values}


def assert_api_error(e: ApiError) -> None:
    assert 400 <= e.status < 500, e
    body = e.body()
    assert body["message"] and body["type"] == "invalid_request_error"
    json.dumps(body)  # serializable as the wire needs it


@FUZZ
@given(st.one_of(st.text(), st.binary(), json_values.map(json.dumps),
                 st.integers(1, 5000).map(lambda n: "[" * n + "]" * n),
                 st.integers(1, 5000).map(lambda n: '{"a":' * n + "1" + "}" * n)))
def test_json_object_parser_returns_an_object_or_a_400(raw):
    try:
        out = parse_json_object(raw, "message")
    except ApiError as e:
        assert_api_error(e)
    else:
        assert isinstance(out, dict)


@FUZZ
@given(st.fixed_dictionaries({}, optional=CREATE_KEYS))
@example(body={"input": [{"role": []}]})  # found by this test: an unhashable role
def test_ws_response_create_parses_or_is_a_400(body):
    try:
        req, meta = parse_create(body, 0.0, 0.0)
    except ApiError as e:
        assert_api_error(e)
    else:
        assert isinstance(req, TurnRequest) and isinstance(meta, dict)
        assert all(isinstance(m, dict) and "role" in m for m in req.messages)


@FUZZ
@given(st.fixed_dictionaries({}, optional=CHAT_KEYS))
@example(body={"messages": [{"role": []}]})  # found by this test: an unhashable role
def test_http_chat_request_parses_or_is_a_400(body):
    try:
        req, stream, usage = parse_chat_request(body, 0.0, 0.0)
    except ApiError as e:
        assert_api_error(e)
    else:
        assert isinstance(req, TurnRequest) and isinstance(stream, bool)
        assert req.temperature is None or math.isfinite(req.temperature)


opt_float = st.one_of(st.none(), st.floats(width=32, allow_nan=True, allow_infinity=True))
grpc_requests = st.builds(
    lambda msgs, tools, temp, top_p, max_tokens, stop, choice: _grpc(
        msgs, tools, temp, top_p, max_tokens, stop, choice),
    st.lists(st.tuples(st.text(max_size=12), st.text(max_size=30)), max_size=4),
    st.lists(st.tuples(st.text(max_size=12), st.one_of(st.text(max_size=40),
                                                        json_values.map(json.dumps))),
             max_size=3),
    opt_float, opt_float, st.one_of(st.none(), st.integers(0, 2**32 - 1)),
    st.lists(st.text(max_size=5), max_size=5),
    st.one_of(st.none(), st.text(max_size=10)))


def _grpc(msgs, tools, temp, top_p, max_tokens, stop, choice) -> pb.GenerateRequest:
    s = pb.SamplingParams(stop=stop)
    if temp is not None:
        s.temperature = temp
    if top_p is not None:
        s.top_p = top_p
    if max_tokens is not None:
        s.max_tokens = max_tokens
    msg = pb.GenerateRequest(messages=[pb.Message(role=r, content=c) for r, c in msgs],
                             tools=[pb.Tool(name=n, parameters_json=p) for n, p in tools],
                             sampling=s)
    if choice is not None:
        msg.tool_choice.mode = choice
    return msg


@FUZZ
@given(grpc_requests)
def test_grpc_request_validates_or_is_invalid_argument(msg):
    try:
        req = turn_request(msg, {}, 0.0, 0.0)
    except ApiError as e:
        assert_api_error(e)
        assert e.grpc_code == "INVALID_ARGUMENT"
    else:
        assert isinstance(req, TurnRequest)
        assert req.temperature is None or 0.0 <= req.temperature <= 2.0
