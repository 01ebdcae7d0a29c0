"""Read a question into intent pieces: label filters, time window, aggregation, ranking, grouping,
comparison and the words left for retrieval. Pure regular expressions over the text; what a piece
means in PromQL is `compose`'s business.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from vigil.common.durations import format_duration

from .asked import (asks_age, at_some_point, contrasted_label, names_each_one, read_order, read_unit,
                    value_phrases)
from .groups import read_grouping
from .knowledge import Knowledge, stem, words
from .named import read_named
from .retrieve import Unanswerable
from .scope import Scope, read_scope, says_whole
from .then import read_then
from .subjects import Component, SmartAttribute, find_component, find_person, find_smart_attribute, find_xid
from .reader_words import (AVG_WORDS, CONCEPT_SUPERLATIVES, ENTITIES, KNOWN_WORDS, MAX_WORDS, MIN_WORDS,
                           RANK_DOWN, RANK_UP, STOP, SUM_WORDS, UNITS, number_of)
from .wording import regular

_WINDOW = re.compile(r"\b(?:in|over|during|for|within|across)?\s*(?:the\s+)?(?:last|past|previous|recent)\s+"
                     r"(\d+|a|an|one|two|three|four|five|six|seven|ten|twelve)?\s*"
                     r"(s|sec|seconds?|m|min|minutes?|h|hours?|d|days?|w|weeks?)\b")
_COUNTING_START = re.compile(r"(?:^|\b(?:the|a|what|whats|is|show|me|get|give|total|gpu|card|node|host|disk|"
                             r"drive|device|target|job)s?)\s*$")
_NEGATIVE_WINDOW = re.compile(r"\b(?:last|past|previous|recent|in|over|during|within|across)\s+-\s*\d")
MAX_WINDOW_S = 10 * 365 * 86400  # a window longer than any retention
MAX_RANK = 10_000  # a longer top-k list is no answer to read (and Prometheus's k is an int64)
_SHORT_WINDOW = re.compile(r"\b(?:in|over|last|past)\s+(\d+)(s|m|h|d|w)\b")
# "averaged over 10 minutes", "in 2 hours": a span without "last"/"past" (a number alone is a comparison)
_BARE_WINDOW = re.compile(r"\b(?:in|over|during|within|across)\s+(\d+|a|an|one|two|three|four|five|six|seven|ten|twelve)"
                          r"\s*(sec|seconds?|min|minutes?|hours?|days?|weeks?)\b")
_TODAY = re.compile(r"\b(today|since yesterday|this week|hourly|daily|weekly)\b")
_PERIODS = {"this week": "7d", "weekly": "7d", "hourly": "1h"}  # the rest: a day
_COMPARE = re.compile(r"\b(above|over|more than|greater than|higher than|exceeding|exceeds|hotter than|busier than|"
                      r"warmer than|larger than|bigger than|below|under|less than|lower than|cooler than|"
                      r"smaller than|idler than|at least|at most|(?:sitting |stuck |exactly )?at(?=\s+-?\d+(?:\.\d+)?\s*"
                      r"(?:%|percent)))\s+"
                      r"(-?\d+(?:\.\d+)?)\s*(%|percent|degrees|°c|c|w|watts|gb|gib|mb|mib|mhz|ghz)?(?![\w-])")
_OPS = {"at": "==", "sitting at": "==", "stuck at": "==", "exactly at": "==", "below": "<", "under": "<",
        "less than": "<", "lower than": "<", "cooler than": "<", "smaller than": "<", "idler than": "<",
        "at least": ">=", "at most": "<="}
_COMPARE_CONCEPT = {"hotter than": " temperature ", "cooler than": " temperature ", "warmer than": " temperature ",
                    "busier than": " utilization ", "idler than": " utilization "}
_UNIT_CONCEPT = {"%": " percent ", "percent": " percent ", "degrees": " temperature ", "°c": " temperature ", "c": " temperature ", "w": " power ",
                 "watts": " power ", "mhz": " clock ", "ghz": " clock "}
_SCALE = {"gb": 1e9, "gib": 2 ** 30, "mb": 1e6, "mib": 2 ** 20, "mhz": 1e6, "ghz": 1e9}
_TOPN = re.compile(r"\b(top|bottom|(?:the\s+)?(\d+|two|three|four|five|ten)\s+(?=\w+est\b|most\b|least\b)|"
                   r"which\s+(\d+|two|three|four|five|ten)\s+(?=\w+s\b)|"
                   # "the 2 GPUs with the lowest SM activity"
                   r"(?:the\s+)?(\d+|two|three|four|five|ten)\s+(?=(?:\w+\s+){1,2}with\s+the\s+(?:\w+est|most|least)\b))\s*"
                   r"(\d+|two|three|four|five|ten)?\b")
# a thing's state at the 0 of a 0/1 series ("held down", "slowed down" are throttling: wording.py)
_STATE_DOWN = re.compile(r"\b(down|lost|unreachable|not up|failed|failing|unhealthy|missing)\b")


@dataclass
class Intent:
    question: str
    words: list[str] = field(default_factory=list)  # content words for retrieval (stemmed)
    matchers: dict[str, str] = field(default_factory=dict)  # label -> value ("a|b": any of them)
    window: str | None = None  # a PromQL duration
    agg: str | None = None  # max, min, avg, sum, count (across series)
    over_time: str | None = None  # max, min, avg for a window
    rank: tuple[str, int] | None = None  # ("topk"|"bottomk"|"sort_desc"|"sort", k)
    group_by: tuple[str, ...] = ()
    compare: tuple[str, float, str | None] | None = None  # (op, number, unit word)
    rate: bool = False
    down: bool = False  # "down", "lost": the 0 of a 0/1 series
    which: str | None = None  # the entity a "which ..." question asks for (gpu, node, alert, ...)
    count: bool = False  # "how many GPUs/nodes/alerts"
    filter_words: set[str] = field(default_factory=set)  # words that set a label value
    listing: bool = False  # starts with a plural entity ("GPUs throttled by ...")
    group_words: tuple[str, ...] = ()  # "per X" words the lexicon does not know: a label of the metric?
    # (label, value, the only metrics it applies to or None) from words like "uncorrected", "zombie", "disks"
    value_words: list[tuple[str, str, tuple[str, ...] | None]] = field(default_factory=list)
    component: Component | None = None  # "the notifier": its scrape job and its own series (subjects.py)
    person: str | None = None  # "did ana get": a matcher on the metric's per-person label
    person_jobs: tuple[tuple[str, ...], str] | None = None  # (on, series): "dave's GPUs", through his jobs
    then_s: int | None = None  # "now minus 6 hours ago": the answer less itself that long ago
    scope: Scope = field(default_factory=Scope)  # "of the fleet", "what fraction of all GPUs" (scope.py)
    smart: SmartAttribute | None = None  # "reallocated sectors": SMART attribute 5 (subjects.py)
    mended: list[str] = field(default_factory=list)  # typos and shorthand mended ("hotest -> hottest")
    text: str = ""  # the question as read: lowercased, mended, made regular (wording.py)
    scrape_jobs: bool = False  # "scrape jobs": Prometheus's `job` label, not training jobs
    each_one: bool = False  # "on the node-2 GPUs": the things named in the plural, one figure each
    unit_out: str | None = None  # "in days", "in GB": the unit the answer is asked in
    age: bool = False  # "how many seconds ago", "how long since": now minus a recorded time


def _window(text: str, intent: Intent) -> str:
    if _NEGATIVE_WINDOW.search(text):
        raise Unanswerable("a time window must be a positive span, such as 'the last 5 minutes'")
    match = _WINDOW.search(text) or _SHORT_WINDOW.search(text) or _BARE_WINDOW.search(text)
    if match:
        count = number_of(match.group(1), 1)
        unit = UNITS[match.group(2)]
        seconds = count * unit
        if not 0 < seconds <= MAX_WINDOW_S:
            raise Unanswerable(f"a window of {count} {match.group(2)} is not one vigil can query: "
                               "more than nothing, at most 10 years")
        intent.window = format_duration(seconds)
        return text[:match.start()] + " " + text[match.end():]
    match = _TODAY.search(text)
    if match:
        intent.window = _PERIODS.get(match.group(1), "1d")
        return text[:match.start()] + " " + text[match.end():]
    return text


def _ranking(text: str, tokens: list[str], intent: Intent) -> None:
    match = _TOPN.search(text)
    which = re.search(r"\b(?:(?:which|what)\s+(?:\w+\s+)?|any\s+(?:\w+\s+)?)(gpus?|cards?|nodes?|hosts?|machines?|servers?|disks?|drives?|"
                      r"devices?|interfaces?|alerts?|targets?|jobs?|teams?|process(?:es)?|channels?|reasons?|xids?|users?|tenants?)\b", text)
    leading = re.match(r"\s*(gpus|nodes|hosts|disks|drives|devices|alerts|targets|jobs|processes)\b", text)
    # "the hottest GPU": a superlative that names its measure, put before a thing, asks which one it is
    named = re.search(r"\b(?:%s)\s+(gpus?|cards?|nodes?|hosts?|machines?|servers?|disks?|drives?|devices?)\b"
                      % "|".join(sorted(CONCEPT_SUPERLATIVES)), text)
    per_other = re.search(r"\b(?:each|every|per)\s+(?:node|host|server|machine|box|job|team|user)\b", text)
    if which:
        intent.which = ENTITIES[which.group(1)]
    elif named and not per_other:  # "hottest GPU reading on each node": a maximum per node, not which GPU
        intent.which = ENTITIES[named.group(1)]
        which = named
    elif leading:  # "GPUs throttled by ...": a list of the flagged ones, like "which GPUs ..."
        intent.listing = True
    many = re.search(r"\b(?:how many|number of|count of|count)\s+(?:of\s+)?(?:(?:the|our|my|all)\s+)?(?:[\w-]*'s\s+)?"
                     r"(?:(?:distinct|unique|different)\s+)?(?:\w+\s+)?(gpus|cards|nodes|hosts|machines|servers|"
                     r"disks|drives|devices|alerts|targets|jobs|processes|series|teams|users|tenants)\b", text) \
        or re.search(r"\b(gpu|card|node|host|disk|drive|device|target|job)s?\s+count\b(?!\s+of)", text)
    if many and re.match(r"\s*count", text[many.start():]) and not _COUNTING_START.search(text[:many.start()]):
        many = None  # "timeout count of the disks": a measurement named "count", not a count of disks
    if many:
        intent.count = True
        said_any = which is not None and which.group(0).startswith("any")  # "how many GPUs have any job"
        intent.which = ENTITIES[many.group(1)] if said_any else intent.which or ENTITIES[many.group(1)]
    up = any(t in RANK_UP for t in tokens)
    down = any(t in RANK_DOWN for t in tokens)
    if match:
        k = number_of(match.group(2) or match.group(3) or match.group(4) or match.group(5), 0)
        if k > MAX_RANK:
            raise Unanswerable(f"a ranking of {k} is longer than vigil lists: at most {MAX_RANK}")
        direction = "bottomk" if match.group(1).startswith("bottom") or down and not up else "topk"
        if k:
            intent.rank = (direction, k)
            thing = re.match(r"\s*(\w+)", text[match.end():]) if match.group(4) else None
            if thing and thing.group(1) in ENTITIES and not intent.which:  # "the 3 nodes with the highest ..."
                intent.which = ENTITIES[thing.group(1)]
            return
    order = read_order(text)
    if order and not intent.count:
        intent.rank = (order, 0)  # "biggest first", "sorted by": every series in order, none aggregated away
        return
    if intent.which and (up or down) and not intent.count:
        plural = which is not None and which.group(1).endswith("s") and not which.group(1).endswith("ss")
        if plural:
            intent.rank = ("sort" if down and not up else "sort_desc", 0)
        else:
            intent.rank = ("bottomk" if down and not up else "topk", 1)
    elif re.search(r"\bwhich\s+(?:\w+\s+){0,3}(?:is|are|was|were|has|have|had|takes?|took|uses?|used|runs?|ran)\b", text) and (up or down) \
            and not intent.count:
        intent.rank = ("bottomk" if down and not up else "topk", 1)  # "which rule group takes the longest"


_EXPLICIT = {"max", "maximum", "min", "minimum", "peak"}


def _aggregation(tokens: list[str], intent: Intent) -> None:
    def first(group: set[str]) -> bool:
        # a ranked question's superlative ("which node is the least busy") ranks; it does not aggregate
        return any(t in group and (not intent.rank or t in _EXPLICIT | AVG_WORDS | SUM_WORDS) for t in tokens)
    if first(AVG_WORDS):
        intent.agg = "avg"
    elif first(MAX_WORDS) or "busiest" in tokens:
        intent.agg = "max"
    elif first(MIN_WORDS):
        intent.agg = "min"
    elif first(SUM_WORDS):
        intent.agg = "sum"
    if intent.window:
        if first(AVG_WORDS) or "averaged" in tokens:  # "utilization averaged over 15 minutes": over time
            intent.over_time = "avg"
        elif first(MAX_WORDS):
            intent.over_time = "max"
        elif first(MIN_WORDS):
            intent.over_time = "min"


def parse_question(question: str, knowledge: Knowledge) -> Intent:
    intent = Intent(question)
    text, intent.mended = regular(question, knowledge, KNOWN_WORDS)
    intent.text = text
    intent.scope = read_scope(text)
    intent.then_s, text = read_then(text)
    if intent.then_s and intent.then_s > MAX_WINDOW_S:
        raise Unanswerable("an offset of more than 10 years is not one vigil can query")
    text = _window(text, intent)
    text = read_named(text, intent.matchers, knowledge)
    intent.unit_out, text = read_unit(text)
    intent.value_words += value_phrases(text, knowledge)
    reached, text = at_some_point(text)
    intent.component = find_component(text, knowledge)
    if intent.component:  # its name sets the job; it needs no metric of its own to be explained
        intent.filter_words.update(intent.component.words)
    intent.person = find_person(text, knowledge)
    if intent.person:
        text = re.sub(rf"(?<![\w-]){re.escape(intent.person)}(?:'s)?(?![\w-])", " ", text)
    match = _COMPARE.search(text)
    if match:
        op = _OPS.get(match.group(1), ">")
        value = float(match.group(2)) * _SCALE.get(match.group(3) or "", 1)
        if not math.isfinite(value):
            raise Unanswerable(f"{match.group(2)} is too large a number to compare with")
        intent.compare = (op, value, match.group(3))
        concept = _COMPARE_CONCEPT.get(match.group(1), " ")
        concept += _UNIT_CONCEPT.get(match.group(3) or "", "")
        text = text[:match.start()] + concept + text[match.end():]
    text = re.sub(r"\bat (?:least|most)\b", " ", text)  # "at least one GPU": no minimum of anything
    tokens = [t for t in re.findall(r"[a-z0-9_]+", text)]
    _ranking(text, tokens, intent)
    _aggregation(tokens, intent)
    if reached and intent.window and intent.compare:  # the lowest of the window for "below", else its highest
        intent.over_time = "min" if intent.compare[0] in ("<", "<=", "==") else "max"
    if re.search(r"\b(rate|per second|per sec|/s|/sec|throughput|how fast|speed)\b", text):
        intent.rate = True
    if _STATE_DOWN.search(text):
        intent.down = True
    intent.each_one = names_each_one(text) and not says_whole(text) and not intent.count \
        and intent.unit_out not in ("kwh", "wh", "mwh", "kw", "mw")  # "kWh burned by the node-1 GPUs": their total
    intent.scrape_jobs = bool(re.search(r"\b(?:scrape|prometheus|exporter)\s+jobs?\b", text)
                              or re.search(r"\btargets?\b", text) and re.search(r"\bjobs?\b", text))
    intent.group_by, intent.group_words = read_grouping(text, knowledge, set(ENTITIES), intent.scrape_jobs)
    if "|" in intent.matchers.get("node", "") and not intent.group_by and not intent.each_one:
        intent.group_by = ("node",)  # "compare node-1 and node-3": a figure for each
    values = knowledge.lexicon.get("values", {})
    for token in tokens:
        found = values.get(token, [])
        if found:
            intent.filter_words.add(stem(token))
        for entry in ([found] if isinstance(found, dict) else found):
            entry = dict(entry)
            only = entry.pop("only", None)
            intent.value_words += [(label, value, tuple(only) if only else None) for label, value in entry.items()]
    contrasted = contrasted_label(text, intent.value_words)
    if contrasted:  # "corrected vs uncorrected": a figure per value, no filter on one and no fraction
        intent.value_words = [v for v in intent.value_words if v[0] != contrasted]
        intent.group_by = tuple(dict.fromkeys(intent.group_by + (contrasted,)))
        intent.scope = Scope(intent.scope.whole, False, intent.scope.own, intent.scope.of_entities)
    intent.age = asks_age(text)
    shape = MAX_WORDS | MIN_WORDS | AVG_WORDS | SUM_WORDS | {"busiest", "idlest", "throughput"}  # "throughput": a rate
    intent.words = [w for w in words(" ".join(t for t in tokens if t not in shape or t in CONCEPT_SUPERLATIVES))
                    if w not in STOP and (len(w) > 1 or w.isdigit())]
    # "uncorrectable ECC errors" name the ECC counter's error type, not the XID whose name says as much
    ecc_typed = any(label == "error_type" for label, _, _ in intent.value_words)
    described = None if ecc_typed else find_xid(intent.words, knowledge)
    if described:  # "fell off the bus": XID 79 of the XID counter, whose words these are not
        intent.matchers.setdefault("xid", described[0])  # "XID 79 (fallen off the bus)": the code said wins
        intent.words = [w for w in intent.words if w not in described[1]]
        intent.words += [] if "xid" in intent.words else ["xid"]
    labelled = {stem(g) for g in intent.group_words if g in knowledge.label_names}
    if labelled:  # "per integration": a label to group by, not a word of the measurement
        intent.words = [w for w in intent.words if w not in labelled] or intent.words
    if intent.age:  # "how long ago did X last ...": a recorded time, not a duration
        intent.words = [w for w in intent.words if w != "long"] + ["timestamp"]
    if intent.scrape_jobs:  # the targets' job label: no training job's metric answers
        intent.words = [("target" if w == "job" else w) for w in intent.words]
    intent.smart = find_smart_attribute(intent.words, knowledge)
    if intent.smart:  # "reallocated sectors": attribute 5 of the SMART attribute gauge
        intent.matchers["attribute_id"] = intent.smart.attribute_id
        dropped = intent.smart.words | {"sector"}
        intent.words = [w for w in intent.words if w not in dropped] + ["smart", "attribute"]
    return intent
