"""The console's maintenance windows as data: the listed windows grouped by where they stand, and the
create form read into the same window the API makes (`api.bodies.new_window`, so the console and
`POST /api/v1/maintenance` accept and refuse the same windows). Pure: the time and zone are passed in.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from zoneinfo import ZoneInfo

from vigil.notifier.api.bodies import NewWindow, new_window, window_body
from vigil.notifier.core.rejected import Rejected
from vigil.notifier.console.render import seconds_of
from vigil.oncall.schedules import moment_at

GROUPS = ("active", "upcoming", "ended")
_SEPARATORS = re.compile(r"[\s,]+")


class FormProblems(ValueError):
    """Everything wrong with a submitted form, each a sentence naming its field."""

    def __init__(self, problems: list[str]):
        super().__init__("; ".join(problems))
        self.problems = problems


def grouped(windows: list[dict], now: float) -> dict[str, list[dict]]:
    """Windows in the API's shape (`GET /api/v1/maintenance?all=true`) as active, upcoming (not begun)
    and ended (over, or ended early); the ended ones latest first."""
    groups: dict[str, list[dict]] = {name: [] for name in GROUPS}
    for window in windows:
        if window["active"]:
            groups["active"].append(window)
        elif window.get("ended_at") or seconds_of(window["ends_at"]) <= now:
            groups["ended"].append(window)
        else:
            groups["upcoming"].append(window)
    groups["ended"].sort(key=lambda w: w.get("ended_at") or w["ends_at"], reverse=True)
    return groups


def window_from_form(form: Mapping[str, str], zone: ZoneInfo, now: float, by: str) -> NewWindow:
    """The window the create form asks for: `match` (LABEL=VALUE pairs, split by spaces, commas or lines),
    `starts` (empty: now), `ends` or `for` (a duration like 2h), `reason`; times without an offset
    are in `zone`. FormProblems listing every mistake at once."""
    problems: list[str] = []
    matchers = _matchers(str(form.get("match", "")), problems)
    starts = _time(form.get("starts"), zone, now, "start", problems)
    ends = _time(form.get("ends"), zone, now, "end", problems)
    duration = str(form.get("for", "") or "").strip()
    if (ends is None) == (not duration) and not any(p.startswith("end") for p in problems):
        problems.append("end: give an end time or a duration (like 2h), one of them")
    if problems:
        raise FormProblems(problems)
    body = window_body(matchers, by, str(form.get("reason", "")).strip() or None, starts, ends, duration)
    try:
        return new_window(body, now)
    except Rejected as exc:
        raise FormProblems([_form_words(exc.message)]) from None


def _matchers(text: str, problems: list[str]) -> dict[str, str]:
    found = {}
    for pair in filter(None, _SEPARATORS.split(text.strip())):
        key, sep, value = pair.partition("=")
        if not sep or not key:
            problems.append(f"labels: {pair!r} is not LABEL=VALUE (like node=gpu-node-07)")
        else:
            found[key] = value
    if not found and not problems:
        problems.append("labels: give at least one LABEL=VALUE (like node=gpu-node-07): alerts whose labels "
                        "equal every one are held")
    return found


def _time(value, zone: ZoneInfo, now: float, name: str, problems: list[str]) -> float | None:
    text = str(value or "").strip()
    if not text:
        return None
    try:
        return moment_at(text, zone, now)
    except ValueError as exc:
        problems.append(f"{name}: {exc}")
        return None


def _form_words(message: str) -> str:
    """The API's reason in the form's words (its fields are named differently there)."""
    for api, form in (("`ends_at`", "the end"), ("`starts_at`", "the start"), ("for:", "duration:"),
                      ("match:", "labels:"), ("`for`", "a duration")):
        message = message.replace(api, form)
    return message
