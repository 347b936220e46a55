from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ToolCall(_message.Message):
    __slots__ = ("id", "name", "arguments_json")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_JSON_FIELD_NUMBER: _ClassVar[int]
    id: str
    name: str
    arguments_json: str
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ..., arguments_json: _Optional[str] = ...) -> None: ...

class Message(_message.Message):
    __slots__ = ("role", "content", "tool_calls", "tool_call_id")
    ROLE_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALLS_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    role: str
    content: str
    tool_calls: _containers.RepeatedCompositeFieldContainer[ToolCall]
    tool_call_id: str
    def __init__(self, role: _Optional[str] = ..., content: _Optional[str] = ..., tool_calls: _Optional[_Iterable[_Union[ToolCall, _Mapping]]] = ..., tool_call_id: _Optional[str] = ...) -> None: ...

class Tool(_message.Message):
    __slots__ = ("name", "description", "parameters_json", "strict")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    PARAMETERS_JSON_FIELD_NUMBER: _ClassVar[int]
    STRICT_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    parameters_json: str
    strict: bool
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., parameters_json: _Optional[str] = ..., strict: _Optional[bool] = ...) -> None: ...

class ToolChoice(_message.Message):
    __slots__ = ("mode", "function_name")
    MODE_FIELD_NUMBER: _ClassVar[int]
    FUNCTION_NAME_FIELD_NUMBER: _ClassVar[int]
    mode: str
    function_name: str
    def __init__(self, mode: _Optional[str] = ..., function_name: _Optional[str] = ...) -> None: ...

class SamplingParams(_message.Message):
    __slots__ = ("temperature", "top_p", "top_k", "max_tokens", "seed", "stop")
    TEMPERATURE_FIELD_NUMBER: _ClassVar[int]
    TOP_P_FIELD_NUMBER: _ClassVar[int]
    TOP_K_FIELD_NUMBER: _ClassVar[int]
    MAX_TOKENS_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    STOP_FIELD_NUMBER: _ClassVar[int]
    temperature: float
    top_p: float
    top_k: int
    max_tokens: int
    seed: int
    stop: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, temperature: _Optional[float] = ..., top_p: _Optional[float] = ..., top_k: _Optional[int] = ..., max_tokens: _Optional[int] = ..., seed: _Optional[int] = ..., stop: _Optional[_Iterable[str]] = ...) -> None: ...

class GenerateRequest(_message.Message):
    __slots__ = ("request_id", "messages", "tools", "tool_choice", "sampling", "trace_headers", "spec_block_size", "model", "parallel_tool_calls")
    class TraceHeadersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    TOOL_CHOICE_FIELD_NUMBER: _ClassVar[int]
    SAMPLING_FIELD_NUMBER: _ClassVar[int]
    TRACE_HEADERS_FIELD_NUMBER: _ClassVar[int]
    SPEC_BLOCK_SIZE_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    PARALLEL_TOOL_CALLS_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    messages: _containers.RepeatedCompositeFieldContainer[Message]
    tools: _containers.RepeatedCompositeFieldContainer[Tool]
    tool_choice: ToolChoice
    sampling: SamplingParams
    trace_headers: _containers.ScalarMap[str, str]
    spec_block_size: int
    model: str
    parallel_tool_calls: bool
    def __init__(self, request_id: _Optional[str] = ..., messages: _Optional[_Iterable[_Union[Message, _Mapping]]] = ..., tools: _Optional[_Iterable[_Union[Tool, _Mapping]]] = ..., tool_choice: _Optional[_Union[ToolChoice, _Mapping]] = ..., sampling: _Optional[_Union[SamplingParams, _Mapping]] = ..., trace_headers: _Optional[_Mapping[str, str]] = ..., spec_block_size: _Optional[int] = ..., model: _Optional[str] = ..., parallel_tool_calls: _Optional[bool] = ...) -> None: ...

class Usage(_message.Message):
    __slots__ = ("prompt_tokens", "completion_tokens", "cached_tokens")
    PROMPT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    COMPLETION_TOKENS_FIELD_NUMBER: _ClassVar[int]
    CACHED_TOKENS_FIELD_NUMBER: _ClassVar[int]
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int
    def __init__(self, prompt_tokens: _Optional[int] = ..., completion_tokens: _Optional[int] = ..., cached_tokens: _Optional[int] = ...) -> None: ...

class TextDelta(_message.Message):
    __slots__ = ("text",)
    TEXT_FIELD_NUMBER: _ClassVar[int]
    text: str
    def __init__(self, text: _Optional[str] = ...) -> None: ...

class ToolCallDelta(_message.Message):
    __slots__ = ("index", "call_id", "name", "arguments_delta", "done", "arguments_json", "error")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_DELTA_FIELD_NUMBER: _ClassVar[int]
    DONE_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_JSON_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    index: int
    call_id: str
    name: str
    arguments_delta: str
    done: bool
    arguments_json: str
    error: str
    def __init__(self, index: _Optional[int] = ..., call_id: _Optional[str] = ..., name: _Optional[str] = ..., arguments_delta: _Optional[str] = ..., done: _Optional[bool] = ..., arguments_json: _Optional[str] = ..., error: _Optional[str] = ...) -> None: ...

class Timing(_message.Message):
    __slots__ = ("server_received_unix_ms", "admission_ms", "render_ms", "queue_ms", "prefill_ms", "decode_ms", "first_token_ms", "host_overhead_ms", "server_ttft_ms", "prompt_tokens", "cached_tokens", "prefill_tokens", "completion_tokens", "server_e2e_ms", "received_unix_ms", "server_received_unix_us", "ttfs_ms", "tool_call_ms", "engine_queue_ms", "engine_host_ms", "trace_id", "receive_ms", "grammar_ms", "render_wait_ms")
    SERVER_RECEIVED_UNIX_MS_FIELD_NUMBER: _ClassVar[int]
    ADMISSION_MS_FIELD_NUMBER: _ClassVar[int]
    RENDER_MS_FIELD_NUMBER: _ClassVar[int]
    QUEUE_MS_FIELD_NUMBER: _ClassVar[int]
    PREFILL_MS_FIELD_NUMBER: _ClassVar[int]
    DECODE_MS_FIELD_NUMBER: _ClassVar[int]
    FIRST_TOKEN_MS_FIELD_NUMBER: _ClassVar[int]
    HOST_OVERHEAD_MS_FIELD_NUMBER: _ClassVar[int]
    SERVER_TTFT_MS_FIELD_NUMBER: _ClassVar[int]
    PROMPT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    CACHED_TOKENS_FIELD_NUMBER: _ClassVar[int]
    PREFILL_TOKENS_FIELD_NUMBER: _ClassVar[int]
    COMPLETION_TOKENS_FIELD_NUMBER: _ClassVar[int]
    SERVER_E2E_MS_FIELD_NUMBER: _ClassVar[int]
    RECEIVED_UNIX_MS_FIELD_NUMBER: _ClassVar[int]
    SERVER_RECEIVED_UNIX_US_FIELD_NUMBER: _ClassVar[int]
    TTFS_MS_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_MS_FIELD_NUMBER: _ClassVar[int]
    ENGINE_QUEUE_MS_FIELD_NUMBER: _ClassVar[int]
    ENGINE_HOST_MS_FIELD_NUMBER: _ClassVar[int]
    TRACE_ID_FIELD_NUMBER: _ClassVar[int]
    RECEIVE_MS_FIELD_NUMBER: _ClassVar[int]
    GRAMMAR_MS_FIELD_NUMBER: _ClassVar[int]
    RENDER_WAIT_MS_FIELD_NUMBER: _ClassVar[int]
    server_received_unix_ms: float
    admission_ms: float
    render_ms: float
    queue_ms: float
    prefill_ms: float
    decode_ms: float
    first_token_ms: float
    host_overhead_ms: float
    server_ttft_ms: float
    prompt_tokens: int
    cached_tokens: int
    prefill_tokens: int
    completion_tokens: int
    server_e2e_ms: float
    received_unix_ms: float
    server_received_unix_us: int
    ttfs_ms: float
    tool_call_ms: float
    engine_queue_ms: float
    engine_host_ms: float
    trace_id: str
    receive_ms: float
    grammar_ms: float
    render_wait_ms: float
    def __init__(self, server_received_unix_ms: _Optional[float] = ..., admission_ms: _Optional[float] = ..., render_ms: _Optional[float] = ..., queue_ms: _Optional[float] = ..., prefill_ms: _Optional[float] = ..., decode_ms: _Optional[float] = ..., first_token_ms: _Optional[float] = ..., host_overhead_ms: _Optional[float] = ..., server_ttft_ms: _Optional[float] = ..., prompt_tokens: _Optional[int] = ..., cached_tokens: _Optional[int] = ..., prefill_tokens: _Optional[int] = ..., completion_tokens: _Optional[int] = ..., server_e2e_ms: _Optional[float] = ..., received_unix_ms: _Optional[float] = ..., server_received_unix_us: _Optional[int] = ..., ttfs_ms: _Optional[float] = ..., tool_call_ms: _Optional[float] = ..., engine_queue_ms: _Optional[float] = ..., engine_host_ms: _Optional[float] = ..., trace_id: _Optional[str] = ..., receive_ms: _Optional[float] = ..., grammar_ms: _Optional[float] = ..., render_wait_ms: _Optional[float] = ...) -> None: ...

class SpecStats(_message.Message):
    __slots__ = ("verify_steps", "accepted_tokens", "committed_tokens", "block_size", "tau")
    VERIFY_STEPS_FIELD_NUMBER: _ClassVar[int]
    ACCEPTED_TOKENS_FIELD_NUMBER: _ClassVar[int]
    COMMITTED_TOKENS_FIELD_NUMBER: _ClassVar[int]
    BLOCK_SIZE_FIELD_NUMBER: _ClassVar[int]
    TAU_FIELD_NUMBER: _ClassVar[int]
    verify_steps: int
    accepted_tokens: int
    committed_tokens: int
    block_size: int
    tau: float
    def __init__(self, verify_steps: _Optional[int] = ..., accepted_tokens: _Optional[int] = ..., committed_tokens: _Optional[int] = ..., block_size: _Optional[int] = ..., tau: _Optional[float] = ...) -> None: ...

class Complete(_message.Message):
    __slots__ = ("finish_reason", "timing", "spec", "model")
    FINISH_REASON_FIELD_NUMBER: _ClassVar[int]
    TIMING_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    finish_reason: str
    timing: Timing
    spec: SpecStats
    model: str
    def __init__(self, finish_reason: _Optional[str] = ..., timing: _Optional[_Union[Timing, _Mapping]] = ..., spec: _Optional[_Union[SpecStats, _Mapping]] = ..., model: _Optional[str] = ...) -> None: ...

class GenerateResponse(_message.Message):
    __slots__ = ("request_id", "usage", "delta", "tool_call_delta", "complete", "server_time_us")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    DELTA_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_DELTA_FIELD_NUMBER: _ClassVar[int]
    COMPLETE_FIELD_NUMBER: _ClassVar[int]
    SERVER_TIME_US_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    usage: Usage
    delta: TextDelta
    tool_call_delta: ToolCallDelta
    complete: Complete
    server_time_us: int
    def __init__(self, request_id: _Optional[str] = ..., usage: _Optional[_Union[Usage, _Mapping]] = ..., delta: _Optional[_Union[TextDelta, _Mapping]] = ..., tool_call_delta: _Optional[_Union[ToolCallDelta, _Mapping]] = ..., complete: _Optional[_Union[Complete, _Mapping]] = ..., server_time_us: _Optional[int] = ...) -> None: ...

class AbortRequest(_message.Message):
    __slots__ = ("request_id",)
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    def __init__(self, request_id: _Optional[str] = ...) -> None: ...

class AbortResponse(_message.Message):
    __slots__ = ("found",)
    FOUND_FIELD_NUMBER: _ClassVar[int]
    found: bool
    def __init__(self, found: _Optional[bool] = ...) -> None: ...
