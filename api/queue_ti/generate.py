"""`make proto`: the Python modules beside queue.proto, made by grpcio-tools.

The proto is compiled under its own name (`queue.proto`, as queue-ti's: see the file), so the generated service
module imports `queue_pb2` as a top-level module; here it is pointed at this package.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
_IMPORT = "import queue_pb2 as queue__pb2"


def generate(folder: Path = HERE) -> None:
    """Compile `folder/queue.proto` into `folder`."""
    import grpc_tools  # noqa: PLC0415 - a development tool, not a runtime dependency
    from grpc_tools import protoc  # noqa: PLC0415

    well_known = Path(grpc_tools.__file__).parent / "_proto"  # google/protobuf/timestamp.proto
    arguments = ["protoc", f"-I{folder}", f"-I{well_known}", f"--python_out={folder}", f"--pyi_out={folder}"]
    if protoc.main([*arguments, f"--grpc_python_out={folder}", str(folder / "queue.proto")]) != 0:
        sys.exit("protoc failed")
    service = folder / "queue_pb2_grpc.py"
    text = service.read_text()
    assert _IMPORT in text, "grpcio-tools changed its import line"
    service.write_text(text.replace(_IMPORT, "from api.queue_ti import queue_pb2 as queue__pb2"))


if __name__ == "__main__":
    generate()
