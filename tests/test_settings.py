"""Settings are parsed once, with errors that name the variable."""

from __future__ import annotations

import pytest

from controlroom.engine.settings import Settings, SettingsError


def test_defaults_need_no_environment() -> None:
    settings = Settings.from_env({})
    assert settings.store == "" and settings.max_concurrent_runs == 64
    assert settings.agent_timeout_s is None and settings.api_token is None


def test_values_are_read_and_typed() -> None:
    settings = Settings.from_env(
        {
            "CONTROLROOM_STORE": "memory",
            "CONTROLROOM_MAX_CONCURRENT_RUNS": "4",
            "CONTROLROOM_AGENT_TIMEOUT_S": "2.5",
            "CONTROLROOM_SSE_PING_S": "1",
            "CONTROLROOM_MAX_EVENT_BYTES": "4096",
            "CONTROLROOM_PHASE_A_AT_ONCE": "3",
        }
    )
    assert settings.phase_a_at_once == 3
    assert (settings.store, settings.max_concurrent_runs, settings.agent_timeout_s) == (
        "memory",
        4,
        2.5,
    )
    assert settings.sse_ping_s == 1.0 and settings.max_event_bytes == 4096


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("CONTROLROOM_MAX_CONCURRENT_RUNS", "lots", "is not a number"),
        ("CONTROLROOM_MAX_CONCURRENT_RUNS", "0", "at least 1"),
        ("CONTROLROOM_AGENT_TIMEOUT_S", "-1", "at least 0"),
        ("CONTROLROOM_MAX_EVENT_BYTES", "12", "at least 1024"),
        ("CONTROLROOM_PHASE_A_AT_ONCE", "0", "at least 1"),
    ],
)
def test_a_bad_value_is_an_error_naming_the_variable(
    variable: str, value: str, message: str
) -> None:
    with pytest.raises(Exception, match=message) as raised:
        Settings.from_env({variable: value})
    assert isinstance(raised.value, SettingsError) or "CONTROLROOM_MAX_EVENT_BYTES" in str(
        raised.value
    )
