from pathlib import Path

from mq.settings import Settings

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_every_setting_is_documented() -> None:
    text = (DOCS / "configuration.md").read_text()
    missing = [name for name in Settings.model_fields if f"`SKIPLOCK_{name.upper()}`" not in text]
    assert missing == []


def test_every_setting_has_a_docstring() -> None:
    assert [name for name, field in Settings.model_fields.items() if not field.description] == []
