"""The log gate of spark_dp.logs: private values only with unsafe debug logging on."""

from __future__ import annotations

import io
import logging
import sys

from spark_dp.logs import (
    StageTimer,
    configure_logging,
    get_logger,
    log_private,
    private,
    unsafe_debug,
    unsafe_debug_enabled,
)


def _stage(log: logging.Logger) -> None:
    timer = StageTimer(log)
    with timer.stage("round 1", max_contributions=37) as info:
        info.public(output_items=211)
        info["candidates"] = 4093
        info.update(union=3517)
    assert "round 1" in timer.seconds


def test_stage_fields_are_private_unless_marked_public(caplog):
    log = get_logger("spark_dp.test_logs")
    with caplog.at_level("DEBUG", logger="spark_dp"):
        _stage(log)
        log_private(log, "rows read: %d", 7919)
    text = caplog.text
    assert "stage round 1: done max_contributions=37 output_items=211 seconds=" in text
    assert "4093" not in text and "3517" not in text and "7919" not in text
    caplog.clear()
    with caplog.at_level("INFO", logger="spark_dp"), unsafe_debug():
        _stage(log)
        log_private(log, "rows read: %d", 7919)
    assert "[UNSAFE-DEBUG] stage round 1: candidates=4093 union=3517" in caplog.text
    assert "[UNSAFE-DEBUG] rows read: 7919" in caplog.text


def test_a_data_dependent_stage_is_logged_only_with_unsafe_debug(caplog):
    """A stage that runs only for some data (a round of an iteration the data stops) leaves no
    line above DEBUG, not even its name; its seconds still count for the bench."""
    log = get_logger("spark_dp.test_logs")
    timer = StageTimer(log)
    with caplog.at_level("DEBUG", logger="spark_dp"):
        with timer.stage("rounds"):
            for r in (1, 2, 3):
                with timer.stage(f"round {r}", data_dependent=True) as info:
                    info["accepted"] = 17 * r
    assert [m for m in caplog.messages if "stage" in m] == [
        "stage rounds: started",
        next(m for m in caplog.messages if m.startswith("stage rounds: done")),
    ]
    assert {"round 1", "round 2", "round 3", "rounds"} <= set(timer.seconds)
    caplog.clear()
    with caplog.at_level("INFO", logger="spark_dp"), unsafe_debug():
        with timer.stage("round 4", data_dependent=True) as info:
            info["accepted"] = 68
    assert "[UNSAFE-DEBUG] stage round 4: started" in caplog.messages
    assert "[UNSAFE-DEBUG] stage round 4: accepted=68" in caplog.messages


def test_private_redacts_values_in_messages():
    assert f"{private(12)} rows" == "<private> rows"
    with unsafe_debug():
        assert f"{private(12)} rows" == "12 rows"
    assert not unsafe_debug_enabled()


def test_configure_logging_sets_the_switch_and_warns():
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    root = logging.getLogger("spark_dp")
    root.addHandler(handler)
    try:
        configure_logging("INFO", unsafe_debug=True)
        assert unsafe_debug_enabled()
        assert any("unsafe debug logging is ON" in r.getMessage() for r in records)
    finally:
        root.removeHandler(handler)
        configure_logging("INFO")
    assert not unsafe_debug_enabled()


def test_logs_follow_stderr_when_it_is_replaced_and_closed(monkeypatch):
    """A notebook kernel or a test harness replaces sys.stderr (and closes the old one) between
    two jobs of one process: the second job's lines reach the new stream, not a closed file."""
    first, second = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stderr", first)
    configure_logging("INFO")
    logging.getLogger("spark_dp.test_logs").info("first job")
    first.close()
    monkeypatch.setattr(sys, "stderr", second)
    configure_logging("INFO")  # idempotent: the handler of the first call stays
    logging.getLogger("spark_dp.test_logs").info("second job")
    assert "second job" in second.getvalue() and "Logging error" not in second.getvalue()
