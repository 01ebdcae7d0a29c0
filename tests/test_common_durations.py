"""One duration parser: every command-line flag takes `10` and `1h30m` alike; rule files stay strict."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from cli_support import all_commands, command
from vigil.cli import main
from vigil.common.click_types import Duration
from vigil.common.durations import format_duration, parse_duration, parse_prometheus_duration


@pytest.mark.parametrize("text, seconds", [
    ("10", 10), ("0.5", 0.5), (" 300 ", 300), ("0", 0), ("30s", 30), ("5m", 300), ("1h30m", 5400),
    ("500ms", 0.5), ("1m30s500ms", 90.5), ("2d", 172_800), ("1w", 604_800), ("14d", 1_209_600), ("1y", 31_536_000),
    (10, 10), (2.5, 2.5),
])
def test_seconds_and_prometheus_durations(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "5 minutes", "-5m", "-1", "5x", "m5", "1.5h", "30m1h", "5m5m", "inf", "nan",
                                  "1e3", True, -3])
def test_anything_else_is_refused_naming_both_forms(text):
    with pytest.raises(ValueError) as caught:
        parse_duration(text)
    assert "is not a duration (seconds like 10 or 0.5, or a Prometheus duration like 30s, 5m, 1h30m, 2d)" in str(caught.value)


@pytest.mark.parametrize("text", ["10", "0.5", "1.5h", "30m1h", "", "5 minutes"])
def test_what_goes_into_prometheus_files_is_what_prometheus_accepts(text):
    with pytest.raises(ValueError, match="is not a Prometheus duration"):
        parse_prometheus_duration(text)


@pytest.mark.parametrize("seconds, text", [(0, "0s"), (0.5, "500ms"), (1.6, "1s600ms"), (90, "1m30s"), (3600, "1h"),
                                           (86400 + 61, "1d1m1s"), (14 * 86400, "2w")])
def test_one_formatter_writes_canonical_prometheus_durations(seconds, text):
    assert format_duration(seconds) == text
    assert parse_prometheus_duration(text) == seconds


# every flag that takes a duration: (command path, other required arguments, flag)
DURATION_FLAGS = [
    (("aiops", "train"), ["--model-dir", "m"], "--lookback"),
    (("aiops", "train"), ["--model-dir", "m"], "--step"),
    (("aiops", "train"), ["--model-dir", "m"], "--max-gap"),
    (("aiops", "serve"), ["--model-dir", "m"], "--refit-interval"),
    (("aiops", "serve"), ["--model-dir", "m"], "--lookback"),
    (("aiops", "serve"), ["--model-dir", "m"], "--step"),
    (("aiops", "serve"), ["--model-dir", "m"], "--max-gap"),
    (("aiops", "serve"), ["--model-dir", "m"], "--risk-interval"),
    (("aiops", "suggest-inhibitions"), [], "--lookback"),
    (("aiops", "suggest-inhibitions"), [], "--window"),
    (("rules", "generate"), [], "--max-for"),
    (("rules", "check"), [], "--max-for"),
    (("rules", "backtest"), [], "--interval"),
    (("rules", "backtest"), [], "--flap-window"),
    (("rules", "backtest"), [], "--max-for"),
    (("exporter", "gpu"), [], "--interval"),
    (("exporter", "gpu"), [], "--gpu-timeout"),
    (("exporter", "gpu"), [], "--dcgm-timeout"),
    (("exporter", "node"), [], "--interval"),
    (("drill",), ["xid79", "--node", "node-1"], "--timeout"),
    (("up",), [], "--scrape-interval"),
    (("up",), [], "--timeout"),
    (("down",), [], "--timeout"),
    (("maintenance", "add"), ["--match", "node=n"], "--for"),
    (("dashboards", "preview"), [], "--window"),
    (("inbox",), [], "--since"),
    (("notifier", "serve"), ["--token-file", __file__, "--oncall-config", __file__], "--resolve-gone-after"),
    (("notifier", "serve"), ["--token-file", __file__, "--oncall-config", __file__], "--header-timeout"),
    (("notifier", "serve"), ["--token-file", __file__, "--oncall-config", __file__], "--body-timeout"),
]


@pytest.mark.parametrize("path, args, flag", DURATION_FLAGS, ids=[f"{' '.join(p)} {f}" for p, _, f in DURATION_FLAGS])
@pytest.mark.parametrize("value, seconds", [("10", 10.0), ("1h30m", 5400.0)])
def test_every_duration_flag_takes_seconds_and_prometheus_durations(path, args, flag, value, seconds):
    ctx = command(path).make_context(path[-1], [*args, flag, value])  # parses the command line as `vigil` does
    name = next(param.name for param in command(path).params if flag in param.opts)
    assert ctx.params[name] == seconds


@pytest.mark.parametrize("path, args, flag", DURATION_FLAGS, ids=[f"{' '.join(p)} {f}" for p, _, f in DURATION_FLAGS])
def test_a_bad_duration_is_a_usage_error_naming_the_flag(path, args, flag):
    result = CliRunner().invoke(main, [*path, *args, flag, "5 minutes"])
    assert result.exit_code == 2, result.output
    assert f"Invalid value for '{flag}': '5 minutes' is not a duration" in result.output
    assert "Traceback" not in result.output


def test_the_table_lists_every_duration_flag():
    found = {(path, opt) for path, cmd in all_commands() for param in cmd.params if isinstance(param.type, Duration)
             for opt in param.opts if opt.startswith("--")}
    assert found == {(path, flag) for path, _, flag in DURATION_FLAGS}


def test_a_bare_number_caps_rules_like_the_same_seconds_with_a_unit():
    seconds, with_unit = (CliRunner().invoke(main, ["rules", "generate", "--max-for", v]) for v in ("90", "1m30s"))
    assert seconds.exit_code == with_unit.exit_code == 0
    assert seconds.output == with_unit.output and "for: 1m30s" in seconds.output


@pytest.mark.parametrize("args, message", [
    (["aiops", "suggest-inhibitions", "--window", "0"], "'0': the duration must be above zero"),
    (["exporter", "node", "--interval", "500ms"], "'500ms' is shorter than the least allowed, 1s"),
])
def test_flags_with_a_floor_say_so(args, message):
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2 and message in result.output
