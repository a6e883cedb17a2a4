import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class EnqueueRequest(_message.Message):
    __slots__ = ("topic", "payload", "metadata", "key")
    class MetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    topic: str
    payload: bytes
    metadata: _containers.ScalarMap[str, str]
    key: str
    def __init__(self, topic: _Optional[str] = ..., payload: _Optional[bytes] = ..., metadata: _Optional[_Mapping[str, str]] = ..., key: _Optional[str] = ...) -> None: ...

class EnqueueResponse(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    def __init__(self, id: _Optional[str] = ...) -> None: ...

class DequeueRequest(_message.Message):
    __slots__ = ("topic", "visibility_timeout_seconds", "consumer_group")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    VISIBILITY_TIMEOUT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    CONSUMER_GROUP_FIELD_NUMBER: _ClassVar[int]
    topic: str
    visibility_timeout_seconds: int
    consumer_group: str
    def __init__(self, topic: _Optional[str] = ..., visibility_timeout_seconds: _Optional[int] = ..., consumer_group: _Optional[str] = ...) -> None: ...

class DequeueResponse(_message.Message):
    __slots__ = ("id", "topic", "payload", "metadata", "created_at", "retry_count", "max_retries", "key")
    class MetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    RETRY_COUNT_FIELD_NUMBER: _ClassVar[int]
    MAX_RETRIES_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    id: str
    topic: str
    payload: bytes
    metadata: _containers.ScalarMap[str, str]
    created_at: _timestamp_pb2.Timestamp
    retry_count: int
    max_retries: int
    key: str
    def __init__(self, id: _Optional[str] = ..., topic: _Optional[str] = ..., payload: _Optional[bytes] = ..., metadata: _Optional[_Mapping[str, str]] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., retry_count: _Optional[int] = ..., max_retries: _Optional[int] = ..., key: _Optional[str] = ...) -> None: ...

class BatchDequeueRequest(_message.Message):
    __slots__ = ("topic", "count", "visibility_timeout_seconds", "consumer_group")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    VISIBILITY_TIMEOUT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    CONSUMER_GROUP_FIELD_NUMBER: _ClassVar[int]
    topic: str
    count: int
    visibility_timeout_seconds: int
    consumer_group: str
    def __init__(self, topic: _Optional[str] = ..., count: _Optional[int] = ..., visibility_timeout_seconds: _Optional[int] = ..., consumer_group: _Optional[str] = ...) -> None: ...

class BatchDequeueResponse(_message.Message):
    __slots__ = ("messages",)
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    messages: _containers.RepeatedCompositeFieldContainer[DequeueResponse]
    def __init__(self, messages: _Optional[_Iterable[_Union[DequeueResponse, _Mapping]]] = ...) -> None: ...

class AckRequest(_message.Message):
    __slots__ = ("id", "consumer_group")
    ID_FIELD_NUMBER: _ClassVar[int]
    CONSUMER_GROUP_FIELD_NUMBER: _ClassVar[int]
    id: str
    consumer_group: str
    def __init__(self, id: _Optional[str] = ..., consumer_group: _Optional[str] = ...) -> None: ...

class AckResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class NackRequest(_message.Message):
    __slots__ = ("id", "error", "consumer_group")
    ID_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    CONSUMER_GROUP_FIELD_NUMBER: _ClassVar[int]
    id: str
    error: str
    consumer_group: str
    def __init__(self, id: _Optional[str] = ..., error: _Optional[str] = ..., consumer_group: _Optional[str] = ...) -> None: ...

class NackResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class SubscribeRequest(_message.Message):
    __slots__ = ("topic", "visibility_timeout_seconds", "consumer_group")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    VISIBILITY_TIMEOUT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    CONSUMER_GROUP_FIELD_NUMBER: _ClassVar[int]
    topic: str
    visibility_timeout_seconds: int
    consumer_group: str
    def __init__(self, topic: _Optional[str] = ..., visibility_timeout_seconds: _Optional[int] = ..., consumer_group: _Optional[str] = ...) -> None: ...

class SubscribeResponse(_message.Message):
    __slots__ = ("id", "topic", "payload", "metadata", "created_at", "retry_count")
    class MetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    RETRY_COUNT_FIELD_NUMBER: _ClassVar[int]
    id: str
    topic: str
    payload: bytes
    metadata: _containers.ScalarMap[str, str]
    created_at: _timestamp_pb2.Timestamp
    retry_count: int
    def __init__(self, id: _Optional[str] = ..., topic: _Optional[str] = ..., payload: _Optional[bytes] = ..., metadata: _Optional[_Mapping[str, str]] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., retry_count: _Optional[int] = ...) -> None: ...
