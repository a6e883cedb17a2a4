from mq.ids import uuid7, uuid7_batch


def test_uuid7_is_version_7_and_strictly_increasing() -> None:
    ids = uuid7_batch(20000)
    assert all(i.version == 7 for i in ids)
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)
    assert uuid7() > ids[-1]
