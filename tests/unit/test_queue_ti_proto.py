"""The gRPC modules in api/queue_ti are what `make proto` makes from queue.proto now, and the service keeps
queue-ti's names and field numbers (its clients connect unchanged)."""

from __future__ import annotations

import re
from pathlib import Path

from api.queue_ti import queue_pb2
from api.queue_ti.generate import generate

ROOT = Path(__file__).resolve().parents[2]

# What names the generator rather than the proto: grpcio-tools' version (a fresh install takes its newest patch,
# whose code is the same) and the protobuf release its compiler targets. The checked-in stamps stay the oldest
# release pyproject allows, so the modules load on every grpcio it accepts.
_GENERATOR_STAMPS = (
    re.compile(r"^GRPC_GENERATED_VERSION = '[^']*'$", re.MULTILINE),
    re.compile(r"^# Protobuf Python Version: .*$", re.MULTILINE),
    re.compile(r"(_runtime_version\.Domain\.PUBLIC,\n)\s*\d+,\n\s*\d+,\n\s*\d+,\n"),
)


def _without_generator_stamps(module: str) -> str:
    for stamp in _GENERATOR_STAMPS:
        module = stamp.sub(lambda match: match.group(1) if match.groups() else "", module)
    return module


def test_the_generated_modules_match_the_proto(tmp_path: Path) -> None:
    (tmp_path / "queue.proto").write_bytes((ROOT / "api" / "queue_ti" / "queue.proto").read_bytes())
    generate(tmp_path)
    for name in ("queue_pb2.py", "queue_pb2.pyi", "queue_pb2_grpc.py"):
        made = _without_generator_stamps((tmp_path / name).read_text())
        checked_in = _without_generator_stamps((ROOT / "api" / "queue_ti" / name).read_text())
        assert made == checked_in, f"{name} is stale: run `make proto`"


def test_queue_tis_own_modules_load_beside_ours() -> None:
    """The descriptors are identical, so protobuf takes both (a duplicate symbol otherwise)."""
    from queueti.pb import queue_pb2 as theirs

    assert theirs.DESCRIPTOR.serialized_pb == queue_pb2.DESCRIPTOR.serialized_pb


def test_queue_tis_service_names_and_field_numbers() -> None:
    service = queue_pb2.DESCRIPTOR.services_by_name["QueueService"]
    assert service.full_name == "queue.QueueService"
    assert [m.name for m in service.methods] == ["Enqueue", "Dequeue", "BatchDequeue", "Ack", "Nack", "Subscribe"]
    fields = {
        name: {f.name: f.number for f in queue_pb2.DESCRIPTOR.message_types_by_name[name].fields}
        for name in ("EnqueueRequest", "DequeueResponse", "BatchDequeueRequest", "NackRequest", "SubscribeRequest")
    }
    assert fields == {
        "EnqueueRequest": {"topic": 1, "payload": 2, "metadata": 3, "key": 4},
        "DequeueResponse": {
            "id": 1,
            "topic": 2,
            "payload": 3,
            "metadata": 4,
            "created_at": 5,
            "retry_count": 6,
            "max_retries": 7,
            "key": 8,
        },
        "BatchDequeueRequest": {"topic": 1, "count": 2, "visibility_timeout_seconds": 3, "consumer_group": 4},
        "NackRequest": {"id": 1, "error": 2, "consumer_group": 3},
        "SubscribeRequest": {"topic": 1, "visibility_timeout_seconds": 2, "consumer_group": 3},
    }
