"""`--tls-cert/--tls-key`: HTTPS, WSS and gRPC over TLS with a self-signed certificate made
in the test (openssl CLI); a plaintext client gets no answer from the TLS port."""

from __future__ import annotations

import json
import shutil
import ssl
import subprocess

import aiohttp
import grpc
import pytest

from turnspec.server.proto.turnspec.v1 import generation_pb2 as pb
from turnspec.server.proto.turnspec.v1 import generation_pb2_grpc as pb_grpc

from .srv_helpers import start_server

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl CLI")


@pytest.fixture(scope="module")
def cert(tmp_path_factory):
    d = tmp_path_factory.mktemp("tls")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-keyout", str(d / "key.pem"), "-out", str(d / "cert.pem"),
                    "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
                   check=True, capture_output=True)
    return d / "cert.pem", d / "key.pem"


async def test_https_wss_and_grpc_over_tls(local_engine, cert):
    cert_pem, key_pem = cert
    srv = start_server(local_engine, tls_cert=str(cert_pem), tls_key=str(key_pem))
    ctx = ssl.create_default_context(cafile=str(cert_pem))
    try:
        async with aiohttp.ClientSession() as s:
            async with s.post(f"https://127.0.0.1:{srv.port}/v1/chat/completions",
                              json={"messages": [{"role": "user", "content": "hi"}],
                                    "max_tokens": 3}, ssl=ctx) as r:
                assert r.status == 200 and (await r.json())["usage"]["completion_tokens"] == 3
            async with s.ws_connect(f"wss://127.0.0.1:{srv.port}/v1/responses", ssl=ctx) as ws:
                await ws.send_str(json.dumps({"type": "response.create", "input": "hi",
                                              "max_output_tokens": 3}))
                while (e := json.loads((await ws.receive()).data))["type"] != \
                        "response.incomplete":
                    assert e["type"] != "error", e
                assert e["response"]["usage"]["output_tokens"] == 3
            with pytest.raises(aiohttp.ClientError):  # no plaintext on the TLS port
                async with s.get(f"http://127.0.0.1:{srv.port}/health",
                                 timeout=aiohttp.ClientTimeout(total=10)) as r:
                    await r.read()
        creds = grpc.ssl_channel_credentials(root_certificates=cert_pem.read_bytes())
        async with grpc.aio.secure_channel(f"127.0.0.1:{srv.grpc_port}", creds) as ch:
            req = pb.GenerateRequest(messages=[pb.Message(role="user", content="hi")],
                                     sampling=pb.SamplingParams(max_tokens=3))
            last = [m async for m in pb_grpc.GenerationStub(ch).Generate(req, timeout=120)][-1]
            assert last.complete.finish_reason == "length" and last.usage.completion_tokens == 3
        s = local_engine.stats()
        assert s.active_sequences == 0 and s.free_kv_blocks == s.total_kv_blocks
    finally:
        srv.stop()
