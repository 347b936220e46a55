"""`turnspec serve` flags for limits, timeouts and TLS (ServerConfig's fields of the same
names; server/limits.py and docs/reliability.md say what each refusal looks like)."""

from __future__ import annotations

import argparse
from typing import Any


def add_limit_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("limits, timeouts and TLS")
    g.add_argument("--max-tools", type=int, default=64,
                   help="tools in one request; more get 400 too_many_tools (default: %(default)s)")
    g.add_argument("--max-input-tokens", type=int, default=None,
                   help="rendered prompt tokens of one turn; more get 400 input_too_long "
                        "(default: the model's context)")
    g.add_argument("--max-output-tokens", type=int, default=None,
                   help="max_tokens one turn may ask for; more get 400 max_tokens_too_large "
                        "(default: the model's context)")
    g.add_argument("--max-ws-connections", type=int, default=4096,
                   help="open WebSocket connections; the next upgrade gets 503 "
                        "too_many_connections (default: %(default)s)")
    g.add_argument("--grpc-streams-per-connection", type=int, default=256,
                   help="concurrent gRPC streams on one connection (default: %(default)s)")
    g.add_argument("--ws-idle-timeout", type=float, default=300.0, metavar="S",
                   help="close a WebSocket with no message and no turn for S seconds "
                        "(default: %(default)s)")
    g.add_argument("--http-keepalive", type=float, default=75.0, metavar="S",
                   help="close an idle HTTP keep-alive connection after S seconds "
                        "(default: %(default)s)")
    g.add_argument("--send-timeout", type=float, default=10.0, metavar="S",
                   help="a streaming client that reads nothing for S seconds loses its turn "
                        "and its connection (default: %(default)s)")
    g.add_argument("--tls-cert", default=None, metavar="PEM",
                   help="serve HTTPS/WSS and gRPC over TLS with this certificate chain")
    g.add_argument("--tls-key", default=None, metavar="PEM", help="the private key of --tls-cert")


def limit_config_from_args(args: argparse.Namespace) -> dict[str, Any]:
    """ServerConfig keyword arguments from the flags above."""
    return {"max_tools": args.max_tools, "max_input_tokens": args.max_input_tokens,
            "max_output_tokens": args.max_output_tokens,
            "max_ws_connections": args.max_ws_connections,
            "grpc_streams_per_connection": args.grpc_streams_per_connection,
            "ws_idle_timeout_s": args.ws_idle_timeout, "http_keepalive_s": args.http_keepalive,
            "send_timeout_s": args.send_timeout, "tls_cert": args.tls_cert,
            "tls_key": args.tls_key}
