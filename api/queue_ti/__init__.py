"""queue-ti's wire protocol: its gRPC service (`queue.proto`, the generated `queue_pb2*` modules) over Skiplock."""
