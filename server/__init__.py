"""turnspec.server: transports (WebSocket, HTTP, gRPC) over one session layer and an Engine.

    transports/http.py           aiohttp app: /v1/chat/completions, /v1/models, /health,
                                 /metrics, and the /v1/responses WebSocket upgrade
    transports/openai_chat.py    Chat Completions body -> TurnRequest; events -> SSE chunks
    transports/ws_responses.py   Responses WebSocket mode (what pipecat's
                                 OpenAIResponsesLLMService speaks)
    transports/responses_events.py   events -> Responses stream events
    transports/grpc_generation.py    turnspec.v1.Generation + health + reflection
    session.py  Session (per connection): validation, conversation state, rendering,
                per-connection limit, grammar, admission -> Turn
    render.py   a turn's prompt ids: the template on the loop, long new text on a thread
    turn.py     Turn: engine deltas -> typed events, cancellation reaching the engine
    hub.py      what sessions share: engine, chat template, admission, auth, readiness,
                registry of in-flight turns, drain
    admission.py, conversation.py, errors.py, events.py, metrics.py, wire.py, config.py
    app.py      ServerApp: one process, start order, SIGTERM drain;  testing.py: on a thread

Transports only translate wire <-> events; the server never runs model code itself.
"""
