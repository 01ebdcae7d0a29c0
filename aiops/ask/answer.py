"""The Text2PromQL pipeline: question -> intent -> retrieval -> composition -> validation -> (run)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .compose import compose
from .examples import load_examples, nearest
from .intent import Intent, parse_question
from .inventory import entity_readings
from .knowledge import Knowledge, load_knowledge
from .retrieve import Match, Unanswerable, best_metric
from .subjects import owner, person_label
from .validate import InvalidQuery, validate
from .wording import question_parts, without_purpose

MAX_QUESTION = 500
# the words of "is <component> (its targets) up/down/healthy": the state of its scrape targets
_TARGET_STATE = frozenset({"target", "scrape", "up", "down", "healthy", "health", "alive", "reachable", "status",
                           "state", "ok", "fine", "work"})


@dataclass(frozen=True)
class Reading:
    """One reading of a question that has several ("per job": scrape jobs or training jobs)."""

    meaning: str
    promql: str
    metrics: list[str]

    def as_json(self) -> dict:
        return {"meaning": self.meaning, "promql": self.promql, "metrics": self.metrics}


@dataclass
class Answer:
    promql: str
    metrics: list[str]
    explanation: str
    readings: list[Reading] = field(default_factory=list)  # two or more when the question is ambiguous
    ask_back: str = ""  # the question back to the user, when it is

    def as_json(self) -> dict:
        body = {"promql": self.promql, "metrics": self.metrics, "explanation": self.explanation}
        if len(self.readings) > 1:  # new fields only where there is something to say: the three are a contract
            body["ask_back"] = self.ask_back
            body["readings"] = [reading.as_json() for reading in self.readings]
        return body


# a request to change something, not a question: PromQL only reads, so any query would answer something else
COMMAND = re.compile(r"(?:please\s+)?(delete|drop|remove|erase|wipe|purge|truncate|reset|restart|reboot|kill|"
                     r"stop|shut\s*down|disable|enable|drain|cancel|silence|acknowledge|ack|resolve|clear)\b"
                     r"(?!\s+(?:sla|slas|time|times|deadline|deadlines|rate|latency|breach|breaches|target)\b)",
                     re.I)  # "ack SLA breaches", "resolve time": a noun, asked about


def check_question(question: object) -> str:
    if not isinstance(question, str) or not question.strip():
        raise Unanswerable("the question is empty")
    if len(question) > MAX_QUESTION:
        raise Unanswerable(f"the question is longer than {MAX_QUESTION} characters")
    command = COMMAND.match(question.strip())
    if command:
        raise Unanswerable(f"'{command.group(1).lower()}' asks to change something; vigil ask only reads metrics "
                           "with PromQL (to act on the fleet: vigil incidents, vigil maintenance, vigil chaos)")
    return question.strip()


def ask(question: str, knowledge: Knowledge | None = None) -> Answer:
    """Answer offline; raises `Unanswerable` (with the reason) when no metric fits. A question with two
    readings ("how many jobs": training or scrape jobs) is answered with the first, and the answer carries
    every reading and the question back (`readings`, `ask_back`)."""
    question = check_question(question)
    knowledge = knowledge or load_knowledge()
    question = without_purpose(question)
    try:
        return _answer(question, knowledge)
    except Unanswerable:
        for part in question_parts(question):  # "Pages go missing. How many failed per channel?": the question
            try:
                return _answer(part, knowledge)
            except Unanswerable:
                continue
        raise


def _answer(question: str, knowledge: Knowledge) -> Answer:
    examples = load_examples()
    intent = parse_question(question, knowledge)
    things = entity_readings(intent, knowledge)
    if things:
        return _asked_back(_with_readings(intent, things, knowledge), question, intent, knowledge)
    near = nearest(set(intent.words), examples)
    match = _retrieve(intent, knowledge, near)
    if _other_aggregate(match.name, intent, knowledge):  # "min ... per job" and only the average is recorded
        grouped = {w for label in intent.group_by for w in (label, label.split("_")[0])}  # per job: not the measure
        intent.words = [w for w in intent.words if w not in grouped and w != "training"] or intent.words
        match = _retrieve(intent, knowledge, near, recorded=False)
    composed = compose(intent, match, knowledge)
    metrics = _validated(composed, knowledge)
    steps = _mended(intent) + list(composed.steps)
    alike = [example for _, example in near if set(example.metrics) & set(metrics)]
    if alike:
        steps.append(f"closest worked example: {alike[0].question!r} -> {alike[0].promql}")
    scrape = _scrape_job_reading(question, intent, composed, knowledge, examples)
    if scrape is not None:
        readings = [Reading("training jobs (job_id)", composed.promql, metrics), scrape]
        steps.append("two readings of 'job' (training jobs / Prometheus scrape jobs): the first is answered")
        return Answer(composed.promql, metrics, "; ".join(steps), readings,
                      "which do you mean: training jobs (job_id) or Prometheus scrape jobs (the job label of "
                      "targets)? Answered as training jobs; ask again with 'per training job' or 'per scrape job'")
    return _asked_back(Answer(composed.promql, metrics, "; ".join(steps)), question, intent, knowledge)


def _asked_back(answer: Answer, question: str, intent: Intent, knowledge: Knowledge) -> Answer:
    """`answer` with a second reading and the question back, where a phrase of the question has two
    (lexicon `two_readings`)."""
    for entry in knowledge.lexicon.get("two_readings", ()) if not answer.readings else ():
        other = _other_reading(entry, question, intent.text, answer.promql, knowledge)
        if other is not None:
            readings = [Reading(entry["first"], answer.promql, answer.metrics), other]
            why = f"two readings ({entry['first']} / {entry['second']}): the first is answered"
            return Answer(answer.promql, answer.metrics, f"{answer.explanation}; {why}", readings,
                          f"which do you mean: {entry['first']} or {entry['second']}? Answered as the first; "
                          f"ask again with {entry['say_first']!r} or {entry['say_second']!r} to choose")
    return answer


def _other_reading(entry: dict, question: str, text: str, promql: str, knowledge: Knowledge) -> Reading | None:
    """The second reading of a phrase with two (lexicon `two_readings`: "memory utilization" is the memory's
    busy time or its fill): the question asked again in the second reading's words."""
    said = question.lower() if entry.get("read") == "question" else text  # the words as asked, or as read
    if not re.search(entry["phrase"], said) or re.search(entry["unless"], said):
        return None
    try:
        other = ask(re.sub(entry["phrase"], entry["instead"], question.lower()), knowledge)
    except Unanswerable:
        return None
    return None if other.promql == promql else Reading(entry["second"], other.promql, other.metrics)


# "per job" with nothing saying which: a training job (job_id) or Prometheus's scrape job (`job`)
_PER_JOB = re.compile(r"\b(?:per|by|for each|for every|each|every)\s+job\b")
_JOB_QUALIFIED = re.compile(r"\b(?:training|slurm|batch|scrape|target|targets|exporter|prometheus)\b")


def _scrape_job_reading(question: str, read: Intent, composed, knowledge: Knowledge, examples) -> Reading | None:
    """The scrape-job reading of a "per job" question answered per training job, or None when the question
    (`read`: as the answer read it) says which job it means or was not answered per training job."""
    if not _PER_JOB.search(read.text) or _JOB_QUALIFIED.search(read.text) or "job_id" in read.matchers \
            or "job_id" not in composed.promql and "job:" not in composed.promql:
        return None
    intent = parse_question(question, knowledge)  # read afresh: answering narrowed `read`'s words
    intent.scrape_jobs = True
    intent.group_by = tuple("job" if label == "job_id" else label for label in intent.group_by)
    intent.words = [w for w in intent.words if w != "job"]
    try:
        near = nearest(set(intent.words), examples)
        alternative = compose(intent, _retrieve(intent, knowledge, near), knowledge)
        metrics = validate(alternative.promql, knowledge)
    except (Unanswerable, InvalidQuery):
        return None
    if alternative.promql == composed.promql or "job_id" in alternative.promql:
        return None
    return Reading("Prometheus scrape jobs (the job label of targets)", alternative.promql, metrics)


def _validated(composed, knowledge: Knowledge) -> list[str]:
    try:
        return validate(composed.promql, knowledge)
    except InvalidQuery as exc:  # a composition bug: say so rather than answer with a broken query
        raise Unanswerable(f"could not compose a valid query: {exc}") from None


def _mended(intent: Intent) -> list[str]:
    return [f"read as spelled: {', '.join(intent.mended)}"] if intent.mended else []


def _with_readings(intent: Intent, things: list, knowledge: Knowledge) -> Answer:
    """The answer to a question that counts or lists things; with two readings, both, and the question back."""
    readings = [Reading(t.meaning, t.composed.promql, _validated(t.composed, knowledge)) for t in things]
    first = readings[0]
    steps = _mended(intent) + list(things[0].composed.steps)
    if len(readings) == 1:
        return Answer(first.promql, first.metrics, "; ".join(steps))
    ask_back = (f"which do you mean: {' or '.join(r.meaning for r in readings)}? Answered as {first.meaning}; "
                f"ask again with {' or '.join(repr(t.said) for t in things)} to choose")
    steps.append(f"two readings ({' / '.join(r.meaning for r in readings)}): the first is answered, "
                 "the others are under readings")
    return Answer(first.promql, first.metrics, "; ".join(steps), readings, ask_back)


def _best_with_labels(intent: Intent, knowledge: Knowledge, near: list, allowed) -> Match:
    """The best metric; but when it lacks a label the question filters on ("XID 79 on node-1": `xid`), the
    best of those that carry them all (or whose labels the catalog does not know, as the AIOps service's)
    if it matches every word the best one matches: the filter is then kept, not dropped. A metric that
    does not is another measurement, and the best one answers (saying the filter was dropped)."""
    filters = frozenset(intent.filter_words)
    if intent.component and set(intent.words) - set(intent.component.words) <= _TARGET_STATE:
        intent.words = ["target", "up"]  # "are the GPU exporter's scrape targets up": `up` of its job
    wanted_labels = frozenset(intent.matchers) | {label for label, _, only in intent.value_words if only is None}
    ranked = intent.rank is not None
    best = best_metric(intent.words, knowledge, near, filters, allowed, wanted_labels, ranked=ranked)
    wanted = set(intent.matchers)
    labels = knowledge.labels(best.name)
    if not wanted or labels is None or wanted <= labels:
        return best

    def labelled(name: str) -> bool:
        known = knowledge.labels(name)
        return (known is None or wanted <= known) and (allowed is None or allowed(name))
    try:
        kept = best_metric(intent.words, knowledge, near, filters, labelled, wanted_labels, ranked=ranked)
    except Unanswerable:
        return best
    # "XID 48 (double bit ECC error)": the code said names the XID counter, whatever else the words match
    said_xid = "xid" in wanted and "xid" in intent.words
    return kept if kept.matched >= best.matched or said_xid else best


def _other_aggregate(name: str, intent: Intent, knowledge: Knowledge) -> bool:
    """A record of one aggregate (`job:x:avg`) where the question asks for another, unrecorded one."""
    parts = name.split(":")
    return len(parts) == 3 and parts[2] in ("avg", "max", "min", "sum") and intent.agg in ("avg", "max", "min", "sum") \
        and intent.agg != parts[2] and ":".join(parts[:2] + [intent.agg]) not in knowledge.metrics


def _retrieve(intent: Intent, knowledge: Knowledge, near: list, recorded: bool = True) -> Match:
    """The best match among the metrics the question's subjects allow, with their matchers set: the
    person's label, the component's job on series every job has (`up`), the alert's name (`recorded`
    False: no recording rule's series)."""
    component, person = intent.component, intent.person

    def any_one(name: str) -> bool:
        if not recorded and name.count(":") == 2:
            return False
        job = owner(name, knowledge)
        return component is None or job is None or job == component.job

    def allowed(name: str) -> bool:  # a per-person question is not answered for everyone
        return any_one(name) and not (person and not person_label(knowledge.labels(name), knowledge))
    through = _through_jobs(intent, knowledge, near, any_one) if person else None
    if through is not None:
        return through
    try:
        match = _best_with_labels(intent, knowledge, near, allowed if component or person or not recorded else None)
    except Unanswerable as exc:
        if not person:
            raise
        labels = " or ".join(knowledge.lexicon.get("person_labels", ()))
        try:
            closest = best_metric(intent.words, knowledge, near, frozenset(intent.filter_words)).name
        except Unanswerable:
            raise Unanswerable(f"{person!r} reads as a person, and no metric with a per-person label ({labels}) "
                               f"answers the rest: {exc}") from None
        raise Unanswerable(f"{person!r} reads as a person, but {closest}, the metric for the rest of the question, "
                           f"has no per-person label ({labels}): vigil does not count it per person") from None
    if person:
        intent.matchers[person_label(knowledge.labels(match.name), knowledge)] = person
    if component and owner(match.name, knowledge) is None and match.alert is None \
            and "job" in (knowledge.labels(match.name) or ()) and intent.which != "target":
        intent.matchers.setdefault("job", component.job)  # `up{job="vigil-notifier"}`: that component's target
    if match.alert:
        intent.matchers["alertname"] = match.alert
    return match


def _through_jobs(intent: Intent, knowledge: Knowledge, near: list, allowed) -> Match | None:
    """A person on series without a person label that the person's training jobs reach ("dave's GPU
    utilization", "how busy is dave's job"): the best match for the rest of the question, kept to that
    person's jobs (lexicon `person_jobs`); None when the best match has the person's label or no such way."""
    try:
        match = _best_with_labels(intent, knowledge, near, allowed)
    except Unanswerable:
        return None
    labels = knowledge.labels(match.name) if match.measure is None else frozenset(match.measure["labels"])
    if labels is None or person_label(labels, knowledge) or match.alert:
        return None
    jobs = knowledge.lexicon["inventory"]["job"]["series"]  # the series saying which jobs hold GPUs, and its records
    if (match.name == jobs or match.name.split(":")[1:2] == [jobs]) and intent.which != "gpu" \
            and not {"gpu", "card"} & set(intent.words):
        return None  # "which jobs does bob run", "list bob's jobs": the jobs' own info names him
    for entry in knowledge.lexicon.get("person_jobs", ()):
        if set(entry["on"]) <= labels:
            intent.person_jobs = (tuple(entry["on"]), entry["series"].format(person=intent.person))
            return match
    return None
