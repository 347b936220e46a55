"""Regenerate the gRPC stubs from `turnspec/v1/generation.proto`.

    python -m turnspec.server.proto.regen

Uses the pinned grpcio-tools (1.81.1: its gencode needs protobuf >= 6.33.5, which pipecat's
protobuf<7 cap allows; 1.85 stubs would need protobuf 7). protoc writes the service module
with an absolute `from turnspec.v1 import ...`, which would resolve against the top-level
`turnspec` package; it is rewritten to a relative import. The stubs are committed.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

PINNED_GRPCIO_TOOLS = "1.81.1"
PROTO_ROOT = Path(__file__).resolve().parent
PROTO_FILES = ("turnspec/v1/generation.proto",)


def main() -> int:
    from importlib.metadata import version

    import grpc_tools
    from grpc_tools import protoc

    found = version("grpcio-tools")
    if found != PINNED_GRPCIO_TOOLS:
        print(f"grpcio-tools {found} installed, expected {PINNED_GRPCIO_TOOLS} (see "
              "install-notes §6: newer gencode needs protobuf 7)", file=sys.stderr)
        return 2
    include = Path(grpc_tools.__file__).parent / "_proto"
    for rel in PROTO_FILES:
        rc = protoc.main([
            "grpc_tools.protoc", f"-I{PROTO_ROOT}", f"-I{include}",
            f"--python_out={PROTO_ROOT}", f"--pyi_out={PROTO_ROOT}",
            f"--grpc_python_out={PROTO_ROOT}", str(PROTO_ROOT / rel),
        ])
        if rc != 0:
            print(f"protoc failed on {rel} (rc={rc})", file=sys.stderr)
            return rc
        stem = rel.removesuffix(".proto")
        grpc_py = PROTO_ROOT / f"{stem}_pb2_grpc.py"
        pkg = ".".join(Path(rel).parent.parts)
        mod = Path(rel).stem + "_pb2"
        text = grpc_py.read_text()
        text = re.sub(rf"^from {re.escape(pkg)} import {mod}", f"from . import {mod}", text,
                      flags=re.M)
        grpc_py.write_text(text)
        print(f"wrote {stem}_pb2.py, {stem}_pb2.pyi, {stem}_pb2_grpc.py")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
