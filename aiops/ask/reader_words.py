"""The words `vigil ask`'s question reader knows of itself (`intent.py`), beside the catalog's and the
lexicon's: aggregation and ranking words, the things a question names, time units, number words, and the
words that decide nothing (stop words). `spelling.py` mends a typo only towards a known word.
"""

from __future__ import annotations

MAX_WORDS = {"max", "maximum", "highest", "peak", "hottest", "warmest", "largest", "biggest", "worst", "top",
             "hotter", "most", "slowest", "longest"}
MIN_WORDS = {"min", "minimum", "lowest", "coolest", "coldest", "smallest", "least", "bottom", "idlest", "fastest"}
AVG_WORDS = {"average", "avg", "mean", "typical"}
SUM_WORDS = {"total", "sum"}  # "overall", "combined": a whole scope, aggregated as the measure adds up (scope.py)
RANK_UP = {"hottest", "busiest", "highest", "most", "largest", "biggest", "top", "worst", "warmest", "max",
           "maximum", "peak", "slowest", "longest"}
RANK_DOWN = {"coolest", "coldest", "idlest", "lowest", "least", "bottom", "smallest", "min", "minimum", "fastest"}
ENTITIES = {"gpu": "gpu", "gpus": "gpu", "card": "gpu", "cards": "gpu", "node": "node", "nodes": "node",
            "host": "node", "hosts": "node", "machine": "node", "machines": "node", "server": "node",
            "servers": "node", "disk": "device", "disks": "device", "drive": "device", "drives": "device",
            "device": "device", "devices": "device", "alert": "alert", "alerts": "alert", "target": "target",
            "targets": "target", "job": "job", "jobs": "job", "team": "team", "teams": "team",
            "process": "process", "processes": "process", "series": "series", "reason": "reason",
            "reasons": "reason", "channel": "channel", "channels": "channel", "xid": "xid", "xids": "xid",
            "user": "user", "users": "user", "tenant": "tenant", "tenants": "tenant",
            "interface": "device", "interfaces": "device"}  # a network interface is node_exporter's `device`
UNITS = {"s": 1, "sec": 1, "second": 1, "seconds": 1, "m": 60, "min": 60, "mins": 60, "minute": 60, "minutes": 60,
          "h": 3600, "hour": 3600, "hours": 3600, "d": 86400, "day": 86400, "days": 86400, "w": 604800,
          "week": 604800, "weeks": 604800}
NUMBER_WORDS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
                 "ten": 10, "twelve": 12, "24": 24}


def number_of(text: str | None, default: int) -> int:
    """The count a question says in digits or in a word ("6", "six", "an"); `default` for none."""
    if not text:
        return default
    return int(text) if text.isdigit() else NUMBER_WORDS.get(text, default)
# superlatives that also name what is measured ("hottest": temperature): kept for retrieval
CONCEPT_SUPERLATIVES = {"hottest", "warmest", "coolest", "coldest", "busiest", "idlest", "slowest", "fastest",
                        "longest"}
STOP = set("a an the is are was were be been being of on in at to for from with by per and or what which "
            "who whom whose how many much does do did has have had there their its it this that these those "
            "me show list give tell right now currently current now any all every each our my we value "
            "values ran run running get got than over under past during across within hour "
            "hours minute minutes day days week weeks today please can you i went go gone out "
            # dashboard and query talk ("single stat panel: avg gpu temp", "how do I get ... using X")
            "panel panels stat singlestat graph chart plot dashboard grafana query promql expression nvidia "
            "how do get want need see "
            # what happened to a thing, not what is measured ("GPUs that logged XID 79")
            "logged log logs reported recorded seen encountered experienced threw thrown raised bit ago send "
            "sends looking moment back averaged "
            # chat filler and the occasion of a question ("weekly review - ...", "absolutely nothing")
            "absolutely actually really basically individual according next review weekly monthly "
            "daily hourly quick thinking root monitoring vm box chargeback overnight lately recently earlier "
            "yesterday about worried concerned ever reach reached reaches hit hits hitting touched touches same "
            "push pushed receiver gotten".split())
# the words the reader itself knows, beside the catalog's and the lexicon's (spelling.py mends the rest)
KNOWN_WORDS = frozenset(STOP | MAX_WORDS | MIN_WORDS | AVG_WORDS | SUM_WORDS | RANK_UP | RANK_DOWN | set(ENTITIES)
                        | set(UNITS) | set(NUMBER_WORDS) | {"hourly", "daily", "weekly", "fleet", "cluster", "whole",
                                                             "entire", "overall", "fraction", "percentage", "share",
                                                             # units an answer may be asked in (asked.py)
                                                             "kilowatts", "megawatts", "gigabytes", "megabytes",
                                                             "terabytes", "kwh", "mhz", "ghz", "gib", "mib",
                                                             "minus"})  # "now minus 6 hours ago" (then.py), not "mins"
