"""Counting and listing things: "how many GPUs does each node have", "how many GPUs are in the fleet",
"list all jobs" (docs/ask.md "Counting things").

Such a question names no measurement, only things and how they relate; it is answered from the series that
lists each thing once (lexicon `inventory`): the GPUs from `vigil_gpu_up`, the disks from
`vigil_disk_smart_read_ok`, the targets from `up`, the training jobs from `vigil_gpu_job`. "How many GPUs
does each node have" is `count by (node) (vigil_gpu_up)`; "how many nodes are running jobs" counts the
distinct nodes of the series relating nodes to jobs: `count(count by (node) (vigil_gpu_job))`.

"Job" names two things: a training job (`job_id`) and Prometheus's scrape job (the `job` label of targets).
A qualifier ("training", "slurm", "scrape", "targets") or a related thing ("jobs running on GPUs") chooses;
a question with neither has two readings, and both are returned (answer.py asks back).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from .compose import Composed, selector
from .groups import resolve
from .intent import Intent
from .knowledge import STACK_TARGET_LABELS, Knowledge, stem

# words that relate things without measuring them ("have", "held by", "running", "in the fleet")
_GLUE = {stem(w) for w in """have has had hold holds held holding use uses using used run runs running ran exist exists
    existing there total distinct different unique count number list show display enumerate all currently right now
    fleet cluster install installed present many do does we our us on in get got each every per altogether overall
    sit live attached belong belongs belonging plugged whole entire configured defined allocated assigned reserved
    occupied given one least any some single dont don doesnt not no without lacking free unused unallocated spare
    them it they sitting unallocated own owns owned owner who submitted launched started""".split()}
# "GPUs that don't have a job", "nodes without jobs": the things the related series does not list
_NEGATED = re.compile(r"\b(?:don'?t|doesn'?t|do not|does not|without|not|no|lacking|free|unused|unallocated|spare)\b")
_FRACTION_WORDS = {stem(w) for w in "fraction percent percentage share proportion ratio".split()}
_SCRAPE_LABELS = {"job", "instance"}  # every target's: what they identify only `up` lists
_LISTING = re.compile(r"^\s*(?:please\s+)?(?:list|show|display|enumerate|give|get|what|which)\b"
                      r"(?:\s+(?:me|us|all|the|of|every|current|currently|our|are|is|there|existing))*\s+(\w+)\b")


@dataclass(frozen=True)
class Thing:
    name: str
    series: str
    keys: tuple[str, ...]
    words: frozenset[str]
    qualifiers: frozenset[str]
    meaning: str
    listing: str | None
    qualifier: str | None  # the first qualifier, as a question would say it ("training")


def _things(knowledge: Knowledge) -> list[Thing]:
    return [Thing(name, spec["series"], tuple(spec["keys"]), frozenset(stem(w) for w in spec["words"]),
                  frozenset(stem(w) for w in spec.get("qualifiers", ())), spec.get("meaning", name + "s"),
                  spec.get("list"), (spec.get("qualifiers") or [None])[0])
            for name, spec in knowledge.lexicon.get("inventory", {}).items()]


@dataclass(frozen=True)
class ThingReading:
    meaning: str  # "training jobs (job_id)"
    composed: Composed
    said: str  # how a question names this reading alone: "training jobs", "scrape jobs"


def entity_readings(intent: Intent, knowledge: Knowledge) -> list[ThingReading]:
    """[(meaning, query)] when the question counts or lists things and names no measurement: one reading,
    or two when "job" is not told apart; [] when it is another kind of question."""
    if intent.rank or intent.compare or intent.down or intent.agg not in (None, "sum") or intent.person:
        return []  # a ranking, a condition, an aggregate of a measurement, a person's (subjects.py)
    things = _things(knowledge)
    listing = _LISTING.match(intent.text)
    counted = stem(listing.group(1)) if listing and not intent.count else None
    if re.match(r"\s*who\s+(?:is\s+)?(?:owns?|owned|submitted|runs?|ran|started|launched|the owner)\b", intent.text):
        counted = "user"  # "who owns job 57433800": the job's user
    share = intent.scope.fraction and intent.scope.of_entities  # "what fraction of all GPUs are running a job"
    if share:
        counted = intent.scope.of_entities
    if intent.count and intent.which:  # the first word naming the thing "how many" asks for
        counted = next((stem(w) for w in re.findall(r"[a-z]+", intent.text)
                        if any(t.name.split()[-1] == intent.which for t in _named(stem(w), things))), None)
    named = _named(counted, things) if counted else []
    if not named:
        return []
    words = set(intent.words)
    known = set().union(*(t.words | t.qualifiers for t in things)) | _GLUE | (_FRACTION_WORDS if share else set())
    known |= {stem(label) for label in intent.group_by}  # "how many GPUs does each user have": the grouping
    known |= set(intent.component.words) if intent.component else set()
    if words - known - {stem(v) for v in intent.matchers.values()}:
        return []  # a measurement or a state is named: not a plain count ("how many GPUs are up")
    chosen = [t for t in named if t.qualifiers & words] or named
    related = _related(intent, things, chosen[0])
    if len(chosen) > 1 and related:
        chosen = chosen[:1]  # "jobs running on GPUs": the training job, related to a GPU
    readings = []
    for thing in chosen:
        if share:
            composed = _fraction(thing, related, intent, knowledge, things)
        elif related and _NEGATED.search(intent.text):  # "how many / which GPUs have no job"
            composed = _without(thing, related[0], intent, knowledge, counting=intent.count)
        elif counted and not intent.count:
            composed = _listed(thing, related, intent, knowledge)
        else:
            composed = _counted(thing, related, intent, knowledge, things)
        if composed is not None:
            said = f"{thing.qualifier} {counted}s" if thing.qualifier else f"{counted}s"
            readings.append(ThingReading(thing.meaning, composed, said))
    return readings


def _named(word: str | None, things: list[Thing]) -> list[Thing]:
    return [t for t in things if word in t.words]


def _related(intent: Intent, things: list[Thing], counted: Thing) -> list[Thing]:
    """The other things the question names, last named first ("a GPU held by a job": job, then GPU),
    leaving out those it groups by ("each node")."""
    found = []
    for word in reversed(intent.words):
        for thing in _named(word, things)[:1]:
            if thing.name != counted.name and not set(thing.keys) <= set(intent.group_by) and thing not in found:
                found.append(thing)
    return found


def _counted(thing: Thing, related: list[Thing], intent: Intent, knowledge: Knowledge,
             things: list[Thing]) -> Composed | None:
    group = tuple(intent.group_by)
    grouped_by = [t for t in things if set(t.keys) <= set(group) and t.name != thing.name][:1]
    candidates = [thing.series] if set(thing.keys) <= _SCRAPE_LABELS else \
        [t.series for t in related + grouped_by] + [thing.series]
    for series in dict.fromkeys(candidates):
        labels = knowledge.labels(series)
        grouping = resolve(group, labels, knowledge)
        if grouping.join is not None and series != thing.series:
            continue
        matchers = {k: v for k, v in intent.matchers.items() if labels is None or k in labels}
        if labels is not None and (not set(thing.keys) <= labels or len(matchers) < len(intent.matchers)):
            continue
        selected = selector(series, matchers)
        by = grouping.labels
        # one series per: its own labels and the keys of what it lists (`up`: a target, job and instance)
        own = (labels or frozenset()) - STACK_TARGET_LABELS - {"uuid"}
        own |= {key for t in things if t.series == series for key in t.keys}
        if grouping.join is not None:
            selected = f"{selected} * on ({', '.join(grouping.join[1])}) group_left ({grouping.join[2]}) {grouping.join[0]}"
        inner = selected if own <= set(thing.keys) | set(by) else \
            f"count by ({', '.join(dict.fromkeys(by + thing.keys))}) ({selected})"
        promql = f"count by ({', '.join(by)}) ({inner})" if by else f"count({inner})"
        steps = [f"counting {thing.meaning} from {series}, which lists each once"
                 + (f", per {', '.join(by)}" if by else ""), *grouping.why]
        return Composed(promql, [series] + ([grouping.join[0]] if grouping.join else []), steps)
    return None


def _without(thing: Thing, other: Thing, intent: Intent, knowledge: Knowledge, counting: bool) -> Composed | None:
    """"Which GPUs don't have a job": the things listed, less those the related series lists; "how many":
    those counted."""
    labels = knowledge.labels(other.series)
    if labels is None or not set(thing.keys) <= labels:
        return None
    matchers = {k: v for k, v in intent.matchers.items() if k in (knowledge.labels(thing.series) or ())}
    selected = selector(thing.series, matchers)
    by = tuple(intent.group_by)
    keys = ", ".join(thing.keys)
    inner = f"group by ({keys}) ({selected}) unless on ({keys}) {other.series}"  # each thing once
    if not counting:
        return Composed(inner, [thing.series, other.series],
                        [f"listing {thing.meaning} that {other.series} does not list (no {other.name})"])
    promql = f"count by ({', '.join(by)}) ({inner})" if by else f"count({inner})"
    return Composed(promql, [thing.series, other.series],
                    [f"counting {thing.meaning} that {other.series} does not list (no {other.name})"])


def _fraction(thing: Thing, related: list[Thing], intent: Intent, knowledge: Knowledge,
              things: list[Thing]) -> Composed | None:
    """"What fraction of all GPUs are running a job": those related (or filtered) over all of them."""
    if not related and not intent.matchers:
        return None  # a fraction of all GPUs that are all GPUs: a measurement must say which (compose.py)
    kept = _counted(thing, related, intent, knowledge, things)
    every = _counted(thing, [], replace(intent, matchers={}), knowledge, things)
    if kept is None or every is None:
        return None
    return Composed(f"{kept.promql} / {every.promql}", list(dict.fromkeys(kept.metrics + every.metrics)),
                    kept.steps + [f"over all of them: {every.promql}"])


def _listed(thing: Thing, related: list[Thing], intent: Intent, knowledge: Knowledge) -> Composed:
    """The things, or those a related thing or a filter names ("which nodes does job 57433800 run on": the
    nodes of the series relating nodes to jobs, for that job)."""
    for other in related if related or intent.matchers else []:
        labels = knowledge.labels(other.series)
        if labels is not None and set(thing.keys) <= labels and set(intent.matchers) <= labels:
            selected = selector(other.series, intent.matchers)
            promql = f"group by ({', '.join(thing.keys)}) ({selected})"
            return Composed(promql, [other.series], [f"listing {thing.meaning} of {other.meaning}: {promql}"])
    own = knowledge.labels(thing.series)
    if intent.matchers and own is not None and set(intent.matchers) <= own:  # "which user owns job 57433800"
        selected = selector(thing.series, intent.matchers)
        promql = f"group by ({', '.join(thing.keys)}) ({selected})"
        return Composed(promql, [thing.series], [f"listing {thing.meaning} of {selected}: {promql}"])
    promql = thing.listing or f"group by ({', '.join(thing.keys)}) ({thing.series})"
    return Composed(promql, [], [f"listing {thing.meaning}: {promql}"])
