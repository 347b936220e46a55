"""Optional TLS for both listeners from one PEM certificate chain and key
(`--tls-cert/--tls-key`): HTTPS/WSS on the aiohttp port, TLS on the gRPC port."""

from __future__ import annotations

import ssl
from pathlib import Path

import grpc


def http_ssl_context(cert: str, key: str) -> ssl.SSLContext:
    """Server-side context: TLS 1.2+, the chain and key loaded (a bad pair fails here, at
    start-up, with ssl's own reason)."""
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        ctx.load_cert_chain(cert, key)
    except ssl.SSLError as e:
        raise ValueError(f"tls_cert/tls_key: could not load {cert!r} with {key!r} as a PEM "
                         f"certificate chain and its private key ({e})") from None
    return ctx


def grpc_server_credentials(cert: str, key: str) -> grpc.ServerCredentials:
    return grpc.ssl_server_credentials([(Path(key).read_bytes(), Path(cert).read_bytes())])
