"""Ranking tools for a query: the built-in lexical ranker (BM25F) and the ``Ranker`` seam plugins fill.

A ranker is made from the searchable tools of one selection (``ToolDoc``s) and answers ``search(query, limit)``
with ``(name, score)`` pairs, best first. The built-in ``BM25Ranker`` needs no model: it splits names into their
parts (``snake_case``, ``camelCase``, ``kebab-case``) and compounds written as one word (``cronjob`` is also
``cron`` and ``job``), folds word forms with a light stemmer (``creates``, ``created``, ``creating`` ->
``creat``), weighs a tool's name above its description, parameters, toolset and source, each field normalised
by its own length (BM25F: a long parameter list does not dilute the name), and widens the query with a short
table of everyday synonyms (``remove`` also looks for ``delete``) at a lower weight. Each word typed is a group
(the word, its synonyms, its completions) that a tool scores by its best member, so a word counts once however
many of its synonyms a tool mentions. Each posting's contribution is computed once when the index is built;
a query adds up the heaviest postings of its terms to find candidates, then scores those exactly.

Plugins add rankers with the ``register_tool_rankers`` hook (an embedding ranker, say) and the configuration
chooses one, or several fused by reciprocal rank (``[tools] search_ranker``).
"""

from __future__ import annotations

import bisect
import functools
import heapq
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any, Protocol

__all__ = [
    "BM25Ranker",
    "Ranker",
    "RankerFactory",
    "ToolDoc",
    "fuse",
    "stem",
    "terms",
    "tool_doc",
]


@dataclass(frozen=True, slots=True)
class ToolDoc:
    """What a ranker may read of one tool: its name, description, parameters, toolset and source."""

    name: str
    description: str = ""
    parameters: tuple[tuple[str, str], ...] = ()  # (name, description) of each top-level parameter
    toolset: str = ""
    source: str = ""  # the plugin, distribution or MCP server that provides it
    schema: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)


class Ranker(Protocol):
    """Ranks the tools it was made from for a query: ``(name, score)`` pairs, best first, at most ``limit``."""

    def search(self, query: str, limit: int) -> list[tuple[str, float]]: ...


RankerFactory = Callable[[Sequence[ToolDoc]], Ranker]
"""Makes a ranker over a selection's searchable tools (called again whenever those tools change)."""


def tool_doc(schema: Mapping[str, Any], toolset: str = "", source: str = "") -> ToolDoc:
    """The ``ToolDoc`` of a registered schema (``{"name", "description", "parameters"}``)."""
    params = schema.get("parameters")
    props = params.get("properties") if isinstance(params, Mapping) else None
    pairs: list[tuple[str, str]] = []
    if isinstance(props, Mapping):
        for key, value in props.items():
            text = value.get("description", "") if isinstance(value, Mapping) else ""
            pairs.append((str(key), str(text or "")))
    return ToolDoc(
        name=str(schema.get("name", "")),
        description=str(schema.get("description") or ""),
        parameters=tuple(pairs),
        toolset=toolset,
        source=source,
        schema=schema,
    )


# -- text -> terms -----------------------------------------------------------------------------------------

_WORDS = re.compile(r"[A-Za-z][a-z]+|[A-Z]+(?![a-z])|[a-z]+|\d+")
_STOP_WORDS = (
    "a an and are as at be been by can could do does for from has have how i if in into is it its me my of on "
    "or our please so some that the their them then there these this those to us was we what when where which "
    "will with would you your want need let just also any all able using use uses via per than did up about "
    "whole "
    "across"
)
_STOP = frozenset(_STOP_WORDS.split())
_DOUBLE = frozenset("bdfgklmnprtz")
# (suffix, replacement, the shortest word it applies to): plurals first, then verb and noun endings
_PLURAL = (
    ("ies", "y", 5),
    ("sses", "ss", 5),
    ("ches", "ch", 5),
    ("shes", "sh", 5),
    ("xes", "x", 5),
    ("zes", "z", 5),
)
_ENDINGS = (("ing", "", 6), ("eed", "eed", 4), ("ed", "", 5), ("ation", "at", 8), ("er", "", 7))


def _strip(word: str, rules: tuple[tuple[str, str, int], ...]) -> str | None:
    for suffix, replacement, shortest in rules:
        if len(word) >= shortest and word.endswith(suffix):
            return word[: -len(suffix)] + replacement
    return None


def stem(word: str) -> str:
    """A light English stemmer: plural and verb endings off, so word forms of one verb or noun meet."""
    if len(word) <= 3:
        return word
    plural = _strip(word, _PLURAL)
    if plural is not None:
        word = plural
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    word = _strip(word, _ENDINGS) or word
    n = len(word)
    if n > 3 and word[-1] == word[-2] and word[-1] in _DOUBLE:
        word = word[:-1]  # running -> runn -> run, committed -> committ -> commit
    elif word.endswith("e") and n > 4:
        word = word[:-1]  # create/creates/created/creating all end as "creat"
    return word


_TERMS: dict[str, str] = {}  # word as written -> its term ("" for a stop word); words repeat a lot


def terms(text: str) -> list[str]:
    """The stemmed terms of ``text``: words split at case changes, digits and punctuation, stop words and single
    letters out."""
    out = []
    known = _TERMS
    for word in _WORDS.findall(text):
        term = known.get(word)
        if term is None:
            lower = word.lower()
            term = "" if lower in _STOP or len(lower) < 2 else stem(lower)
            if len(known) < 200_000:
                known[word] = term
        if term:
            out.append(term)
    return out


# Everyday words people use for what tool descriptions call by another name. Query-side only, weighed lower
# than the words typed, so an exact match still wins.
_SYNONYMS: dict[str, tuple[str, ...]] = {
    "make": ("create", "new", "add"),
    "new": ("create",),
    "add": ("create", "insert"),
    "start": ("create", "run", "launch"),
    "open": ("create", "get", "read"),
    "remove": ("delete",),
    "erase": ("delete",),
    "drop": ("delete",),
    "destroy": ("delete",),
    "trash": ("delete",),
    "kill": ("delete", "stop", "terminate"),
    "cancel": ("delete", "stop"),
    "show": ("get", "list", "view"),
    "see": ("get", "list", "view"),
    "view": ("get", "read"),
    "display": ("get", "list"),
    "look": ("get", "search", "find"),
    "check": ("get", "status"),
    "fetch": ("get", "retrieve", "download"),
    "retrieve": ("get",),
    "grab": ("get", "download"),
    "read": ("get",),
    "find": ("search", "get", "list"),
    "lookup": ("search", "get"),
    "query": ("search", "get"),
    "which": ("list",),
    "change": ("update", "edit", "modify"),
    "modify": ("update", "edit"),
    "edit": ("update",),
    "alter": ("update",),
    "rename": ("update", "move"),
    "set": ("update",),
    "save": ("write", "create", "store"),
    "store": ("write", "save"),
    "put": ("write", "upload"),
    "send": ("post", "create"),
    "post": ("send", "create"),
    "reply": ("comment", "respond"),
    "ticket": ("issue",),
    "bug": ("issue",),
    "task": ("issue",),
    "pr": ("pull", "request"),
    "mr": ("merge", "request"),
    "repo": ("repository",),
    "folder": ("directory",),
    "dir": ("directory",),
    "directory": ("folder",),
    "photo": ("image", "screenshot"),
    "picture": ("image",),
    "pic": ("image",),
    "screenshot": ("image", "capture"),
    "doc": ("document",),
    "docs": ("documentation", "document"),
    "db": ("database",),
    "msg": ("message",),
    "dm": ("message", "direct"),
    "chat": ("message", "channel"),
    "email": ("mail", "message"),
    "mail": ("email",),
    "k8s": ("kubernetes",),
    "webpage": ("page", "url"),
    "website": ("page", "url", "web"),
    "site": ("page", "url", "web"),
    "link": ("url",),
    "url": ("link", "page"),
    "click": ("press",),
    "type": ("fill", "input"),
    "note": ("memory", "observation", "comment"),
    "remember": ("memory", "save"),
    "forget": ("delete", "memory"),
    "schedule": ("cron", "job"),
    "later": ("schedule", "cron"),
    "every": ("cron", "schedule"),
    "spreadsheet": ("excel", "sheet", "workbook"),
    "sheet": ("worksheet",),
    "column": ("field", "range", "cell"),
    "row": ("record",),
    "log": ("logs",),
    "error": ("issue", "exception"),
    "crash": ("error", "exception"),
    "run": ("execute",),
    "execute": ("run",),
    "command": ("terminal", "shell"),
    "shell": ("terminal", "command"),
    "undo": ("revert", "reset"),
    "revert": ("reset",),
    "history": ("log",),
    "diff": ("changes",),
    "changes": ("diff",),
    "stage": ("add",),
    "upload": ("put", "write"),
    "download": ("get", "fetch"),
    "copy": ("duplicate",),
    "move": ("rename",),
    "weather": ("forecast",),
    "time": ("clock", "date"),
    "speak": ("speech", "audio"),
    "say": ("speech",),
    "voice": ("speech", "audio"),
    "draw": ("image", "generate"),
    "video": ("movie", "clip"),
    "ask": ("question", "clarify"),
    "user": ("member", "account"),
    "people": ("user", "member"),
    "person": ("user", "member"),
    "team": ("group",),
    "calendar": ("event",),
    "meeting": ("event",),
    "comment": ("reply", "note"),
    "label": ("tag",),
    "tag": ("label",),
    # what people say when they mean history, content, state, size, failure...
    "talk": ("message", "speech", "conversation", "session"),
    "discuss": ("conversation", "session", "message"),
    "said": ("message", "conversation", "history"),
    "conversation": ("session", "message", "chat"),
    "earlier": ("history", "previous", "past"),
    "before": ("history", "previous", "version"),
    "past": ("history", "previous"),
    "last": ("latest", "recent", "log", "history"),
    "latest": ("recent", "new"),
    "news": ("search", "web", "latest"),
    "inside": ("content", "read"),
    "content": ("read",),
    "card": ("task", "kanban", "issue"),
    "board": ("kanban", "task", "agile"),
    "loud": ("speech", "audio", "voice"),
    "aloud": ("speech", "audio", "voice"),
    "mp3": ("audio", "speech"),
    "sensor": ("entity", "state", "device"),
    "temperature": ("sensor", "state"),
    "device": ("entity",),
    "done": ("complete", "status", "transition", "finish"),
    "status": ("state", "transition"),
    "tab": ("sheet",),
    "value": ("read", "get", "cell"),
    "highlight": ("format", "conditional", "color"),
    "coordinate": ("geocode", "latitude", "longitude", "location"),
    "height": ("elevation",),
    "altitude": ("elevation",),
    "high": ("elevation", "height"),
    "big": ("size",),
    "large": ("size",),
    "many": ("count", "number"),
    "why": ("failure", "error", "logs", "describe", "analyze"),
    "fail": ("failure", "error"),
    "plan": ("prepare", "planning"),
    "go": ("navigate", "open", "visit"),
    "visit": ("navigate", "open"),
    "leave": ("add", "post", "comment"),
    "hour": ("time", "worklog", "duration"),
    "work": ("worklog", "task"),
    "who": ("user", "member", "assign", "whoami"),
    "wiki": ("page", "space", "confluence", "notion"),
    "cell": ("range", "sheet"),
    "drive": ("directions", "route", "distance"),
    "route": ("directions",),
    "distance": ("directions", "matrix"),
    "combine": ("aggregate", "merge", "mixture"),
    "unstage": ("reset",),
    "mistake": ("undo", "revert", "reset"),
    "pick": ("select", "option", "choose"),
    "choose": ("select", "option"),
    "dropdown": ("select", "option"),
    "address": ("geocode", "location"),
    "research": ("search", "paper", "report"),
    "attach": ("upload", "attachment"),
    "pull": ("import", "fetch"),
}
# The same relation seen from the tools' side: each word tools are named and described with, and the everyday
# words people use for it. Written by going through the verbs and nouns of tool names, not from any query.
_CONCEPTS: dict[str, str] = {
    "create": "make new add jot spin setup build generate raise file register compose draft open",
    "delete": "remove erase drop destroy trash discard throw rid wipe purge clear uninstall scrap nuke",
    "update": "change modify edit alter set tweak adjust fix correct bump replace",
    "list": "show which all every enumerate browse see display overview inventory",
    "get": "show fetch retrieve grab read view see check look inspect print details info what",
    "search": "find look grep locate hunt query lookup seek discover scan mentioning",
    "read": "open view show see print cat inside content contents lines look",
    "write": "save store put record dump output jot",
    "run": "execute start launch kick trigger invoke fire perform",
    "stop": "halt kill terminate end cancel abort pause shut",
    "send": "post tell notify ping announce share dm broadcast say",
    "message": "tell notify ping chat dm text announce say",
    "comment": "note reply remark feedback respond",
    "issue": "ticket bug task problem defect story card",
    "memory": "remember jot note recall forget fact preference",
    "todo": "checklist pending tasks agenda",
    "cron": "remind reminder schedule every daily weekly nightly hourly later recurring periodically routine",
    "time": "now today date clock hour timezone",
    "file": "document doc txt path",
    "directory": "folder dir tree",
    "image": "picture photo pic screenshot drawing illustration graphic png jpg",
    "speech": "voice loud aloud spoken audio mp3 narrate say read",
    "video": "clip movie film animation",
    "navigate": "go visit open load browse",
    "click": "press tap hit",
    "type": "enter fill input write",
    "screenshot": "capture snapshot picture grab",
    "page": "site website webpage url link wiki article",
    "directions": "drive route travel commute walk",
    "place": "restaurant cafe shop store business venue hotel bar",
    "geocode": "coordinates latitude longitude location address",
    "details": "rating hours phone reviews info information",
    "user": "who people person member account colleague teammate",
    "assign": "reassign owner responsible",
    "transition": "move done close resolve status progress reopen",
    "log": "history logs output printed trace",
    "diff": "changed change difference compare between",
    "reset": "undo revert unstage discard throw",
    "checkout": "switch discard restore throw",
    "deployment": "deploy app release",
    "rollout": "restart rollback redeploy roll",
    "scale": "replicas instances resize",
    "patch": "tag tweak",
    "helm": "chart release package",
    "database": "db mongo sql table collection",
    "count": "many number total",
    "size": "big large disk space storage usage much",
    "storage": "disk space size usage",
    "many": "every all bulk batch",
    "entity": "device sensor light lamp switch door lock thermostat fan plug",
    "service": "turn switch lock unlock",
    "state": "temperature reading status level value",
    "hover": "mouse over point",
    "evaluate": "javascript js script code",
    "drag": "move drop",
    "select": "pick choose dropdown option",
    "upload": "attach attachment put",
    "download": "save export fetch",
    "import": "load pull bring ingest",
    "export": "save dump download output",
    "extract": "text content article scrape main",
    "web": "news google internet online",
    "monitor": "watch track alert observe",
    "version": "release",
    "watcher": "watching following subscriber",
    "worklog": "hours spent",
    "sheet": "tab worksheet spreadsheet",
    "range": "cells cell rows column area",
    "row": "lines records entries",
    "chart": "graph plot visualize visualise",
    "format": "highlight color colour bold style",
    "terminal": "shell command bash rm mkdir",
}


@functools.cache
def _synonym_stems() -> dict[str, tuple[str, ...]]:
    """The stemmed synonym table, built on the first search (not at import: most starts never search)."""
    merged: dict[str, list[str]] = {}
    for word, others in _SYNONYMS.items():
        merged.setdefault(stem(word), []).extend(stem(o) for o in others)
    for tool_word, everyday in _CONCEPTS.items():
        for word in everyday.split():
            merged.setdefault(stem(word), []).append(stem(tool_word))
    return {k: tuple(dict.fromkeys(o for o in v if o != k)) for k, v in merged.items()}


_FILE_NAME = re.compile(
    r"\b[\w-]+\.(?:py|js|ts|tsx|jsx|md|txt|json|ya?ml|toml|html?|css|csv|xml|ini|cfg|sh|go|rs|java|c|h|cpp|rb|php|sql|log)\b",
    re.I,
)
_SYNONYM_WEIGHT = 0.6

# Field weights: a word in the name says most about what a tool does.
_NAME_WEIGHT = 3.0
_DESCRIPTION_WEIGHT = 1.0
_FIRST_SENTENCE_WEIGHT = 0.6  # on top of the description's: the summary says what the tool is for
_PARAM_NAME_WEIGHT = 0.6
_PARAM_DESCRIPTION_WEIGHT = 0.3
_GROUP_WEIGHT = 0.8  # toolset and source
_K1 = 1.2
_B = 0.75
NAME_BONUS = 1.5
COORD_FLOOR = 0.5
GROUP_BONUS = 0.5
_PREFIX_WEIGHT = 0.5
_PART_WEIGHT = 0.5  # each part of a compound name word, of the name's weight
_RESCORED = 40
_DEPTH = 200  # postings of one term walked to find candidates


def _first_sentence(text: str) -> str:
    cut = re.search(r"[.!?](\s|$)|\n", text)
    return text[: cut.start()] if cut else text


_FIELDS = 4  # name, description, parameters, toolset and source
_FIELD_WEIGHTS = (_NAME_WEIGHT, _DESCRIPTION_WEIGHT, 1.0, _GROUP_WEIGHT)
Fields = tuple[dict[str, float], ...]


def _fields(doc: ToolDoc) -> Fields:
    """The term frequencies of each field of ``doc`` (within a field, some text counts for more or less)."""
    name: dict[str, float] = {}
    description: dict[str, float] = {}
    parameters: dict[str, float] = {}
    group: dict[str, float] = {}

    def add(tf: dict[str, float], text: str, weight: float = 1.0) -> None:
        for term in terms(text):
            tf[term] = tf.get(term, 0.0) + weight

    add(name, doc.name)
    add(description, doc.description)
    add(description, _first_sentence(doc.description), _FIRST_SENTENCE_WEIGHT)
    for key, text in doc.parameters:
        add(parameters, key, _PARAM_NAME_WEIGHT)
        if text:
            add(parameters, text, _PARAM_DESCRIPTION_WEIGHT)
    add(group, doc.toolset.removeprefix("mcp-"))
    if doc.source and doc.source != doc.toolset:
        add(group, doc.source)
    return name, description, parameters, group


_DOC_FIELDS: dict[ToolDoc, Fields] = {}  # a rebuilt index (one MCP server reconnected) reuses these


def _doc_fields(doc: ToolDoc) -> Fields:
    found = _DOC_FIELDS.get(doc)
    if found is None:
        found = _fields(doc)
        if len(_DOC_FIELDS) >= 50_000:
            _DOC_FIELDS.clear()
        _DOC_FIELDS[doc] = found
    return found


class _Splitter:
    """Splits a compound written as one word (``cronjob``, ``webhook``, ``filesystem``) into two terms the index
    knows, each at least three letters, unless the whole is much more common than its parts (more than twice
    the geometric mean of the numbers of tools using each): ``download`` or ``output`` stay whole."""

    def __init__(self, known: dict[str, int]) -> None:
        self.known = known
        self.cache: dict[str, tuple[str, ...]] = {}

    def __call__(self, term: str) -> tuple[str, ...]:
        found = self.cache.get(term)
        if found is None:
            found = ()
            known = self.known
            if len(term) >= 6 and not term.isdigit():
                best = known.get(term, 0) / 2  # the whole may be up to twice as common as its parts
                for cut in range(3, len(term) - 2):
                    head, tail = term[:cut], term[cut:]
                    if head in known:
                        tail = tail if tail in known else stem(tail)
                        common = math.sqrt(known[head] * known.get(tail, 0))
                        if common >= best:
                            found, best = (head, tail), common
            self.cache[term] = found
        return found


class BM25Ranker:
    """BM25F over the tools' names, descriptions, parameters, toolsets and sources (see the module)."""

    name = "bm25"

    def __init__(self, docs: Sequence[ToolDoc]) -> None:
        self.names = [d.name for d in docs]
        fielded = [_doc_fields(d) for d in docs]
        known: dict[str, int] = {}
        for fields in fielded:
            for term in set().union(*fields):
                known[term] = known.get(term, 0) + 1
        split = _Splitter(known)
        units: list[tuple[tuple[str, tuple[str, ...]], ...]] = []
        for number, doc in enumerate(docs):
            named = tuple((t, split(t)) for t in dict.fromkeys(terms(doc.name)))
            units.append(named)
            if any(parts for _, parts in named):  # "cronjob" is also "cron" and "job"
                name = dict(fielded[number][0])
                for _, parts in named:
                    for part in parts:
                        name[part] = name.get(part, 0.0) + _PART_WEIGHT
                fielded[number] = (name, *fielded[number][1:])
        # BM25F: each field's frequencies are weighed and normalised by that field's length, then summed and
        # saturated once; a tool's long parameter list does not dilute what its name says
        count = len(docs)
        averages = [
            max(sum(sum(f[i].values()) for f in fielded) / max(count, 1), 1e-9) for i in range(_FIELDS)
        ]
        frequency: dict[str, int] = {}
        for fields in fielded:
            for term in set().union(*fields):
                frequency[term] = frequency.get(term, 0) + 1
        idf = {term: math.log(1 + (count - df + 0.5) / (df + 0.5)) for term, df in frequency.items()}
        postings: dict[str, dict[int, float]] = {}
        for number, fields in enumerate(fielded):
            tf: dict[str, float] = {}
            for counts, weight, average in zip(fields, _FIELD_WEIGHTS, averages, strict=True):
                if counts:
                    scale = weight / (1 - _B + _B * sum(counts.values()) / average)
                    for term, f in counts.items():
                        tf[term] = tf.get(term, 0.0) + f * scale
            for term, f in tf.items():
                postings.setdefault(term, {})[number] = idf[term] * f * (_K1 + 1) / (f + _K1)
        self._postings = postings
        self._name_units = units
        self._group_terms = [frozenset(terms(f"{d.toolset.removeprefix('mcp-')} {d.source}")) for d in docs]
        self._vocabulary = sorted(postings)
        self._top: dict[str, dict[int, float]] = {}  # the heaviest postings of frequent terms

    def _groups(self, query: str) -> list[tuple[float, dict[str, float]]]:
        """The query as groups, one per word typed: the word's term (weight 1) and the terms it stands for
        (synonyms, completions of a prefix, the word without ``re``/``un``) at lower weights. A tool scores a
        group by its best member, so a word with many synonyms counts once, however many of them a tool has."""
        typed: dict[str, float] = {}
        for term in terms(query):
            typed[term] = typed.get(term, 0.0) + 1.0
        groups: list[tuple[float, dict[str, float]]] = []
        postings = self._postings
        synonyms = _synonym_stems()
        for term, count in typed.items():
            members = {term: 1.0}
            for other in synonyms.get(term, ()):
                members.setdefault(other, _SYNONYM_WEIGHT)
            if len(term) >= 4:  # "mongo" finds "mongodb", "kube" finds "kubernetes"
                for other in self._completions(term):
                    members.setdefault(other, _PREFIX_WEIGHT)
            for prefix in ("re", "un"):  # reassign -> assign, rerun -> run, uncommitted -> commit
                base = term[2:]
                if term.startswith(prefix) and len(base) > 3 and base in postings:
                    members.setdefault(base, _PREFIX_WEIGHT)
            groups.append((count, members))
        if _FILE_NAME.search(query) and "file" not in typed:  # "main.py": a file
            groups.append((_SYNONYM_WEIGHT, {"file": 1.0}))
        return groups

    def _completions(self, prefix: str, most: int = 3) -> list[str]:
        vocabulary = self._vocabulary
        out: list[str] = []
        at = bisect.bisect_right(vocabulary, prefix)
        while at < len(vocabulary) and len(out) < most and vocabulary[at].startswith(prefix):
            out.append(vocabulary[at])
            at += 1
        return out

    def _leaders(self, term: str, plist: dict[int, float]) -> dict[int, float]:
        """A term's postings for finding candidates: all of them, or for a term in many tools its ``_DEPTH``
        heaviest (the candidates' exact scores are added up again afterwards)."""
        if len(plist) <= _DEPTH:
            return plist
        top = self._top.get(term)
        if top is None:
            top = self._top[term] = dict(heapq.nlargest(_DEPTH, plist.items(), key=itemgetter(1)))
        return top

    def search(self, query: str, limit: int) -> list[tuple[str, float]]:
        if limit < 1:
            return []
        postings = self._postings
        groups: list[tuple[float, list[tuple[str, dict[int, float], float]]]] = []
        weight_of: dict[str, float] = {}  # each term's heaviest weight in the query
        for count, wanted in self._groups(query):
            found = []
            for term, weight in wanted.items():
                posted = postings.get(term)
                if posted is not None:
                    found.append((term, posted, weight))
                    if weight > weight_of.get(term, 0.0):
                        weight_of[term] = weight
            if found:
                groups.append((count, found))
        if not groups:
            return []
        # candidates: the tools in the heaviest postings of each group's terms, each group's best member
        # (the first member's postings are copied, not walked: for a word with no stand-ins, that is all)
        leaders = self._leaders
        bests: list[dict[int, float]] = []
        for count, members in groups:
            term, plist, weight = members[0]
            weight *= count
            first = leaders(term, plist)
            if weight != 1.0:
                best = {doc: value * weight for doc, value in first.items()}
            else:
                best = dict(first) if len(members) > 1 else first  # never changed when it is the postings
            top = best.get
            for term, plist, weight in members[1:]:
                weight *= count
                for doc, value in leaders(term, plist).items():
                    value *= weight
                    if value > top(doc, 0.0):
                        best[doc] = value
            bests.append(best)
        bests.sort(key=len, reverse=True)
        scores = dict(bests[0])
        get = scores.get
        for other in bests[1:]:
            for doc, value in other.items():
                scores[doc] = get(doc, 0.0) + value
        wide = max(limit * 8, _RESCORED)
        leading = heapq.nlargest(wide, scores, key=scores.__getitem__) if len(scores) > wide else list(scores)
        ranked = self._rescore(leading, groups, weight_of, limit)
        names = self.names
        return [(names[doc], score) for score, doc in ranked]

    def _rescore(
        self,
        leading: list[int],
        groups: list[tuple[float, list[tuple[str, dict[int, float], float]]]],
        weight_of: dict[str, float],
        limit: int,
    ) -> list[tuple[float, int]]:
        """The leading candidates' exact scores, with two signals BM25 lacks: how much of the tool's name the
        query covers (names are the tools' tersest summaries), and what share of the words typed the tool
        matched (a word matched only through a stand-in counts for the stand-in's weight)."""
        out = []
        name_units = self._name_units
        group_terms = self._group_terms
        typed = len(groups)
        for doc in leading:
            score = matched = 0.0
            for count, members in groups:
                value = weight = 0.0
                for _, plist, w in members:
                    v = plist.get(doc)
                    if v is not None:
                        v *= w
                        if v > value:
                            value = v
                        if w > weight:
                            weight = w
                score += value * count
                matched += weight
            units = name_units[doc]
            if units:
                covered = 0.0
                for term, parts in units:
                    c = weight_of.get(term, 0.0)
                    if parts:
                        c = max(c, sum(weight_of.get(p, 0.0) for p in parts) / len(parts))
                    covered += c
                covered /= len(units)
                score *= 1 + NAME_BONUS * min(covered, 1.0)
            score *= COORD_FLOOR + (1 - COORD_FLOOR) * matched / typed
            if not group_terms[doc].isdisjoint(weight_of):  # the query names the tool's service
                score *= 1 + GROUP_BONUS
            out.append((score, -doc))  # equal scores: the tool registered first
        return [(score, -doc) for score, doc in heapq.nlargest(limit, out)]


def fuse(rankings: Iterable[list[tuple[str, float]]], limit: int, k: float = 60.0) -> list[tuple[str, float]]:
    """Reciprocal rank fusion of several rankers' answers: ``sum(1 / (k + rank))`` per tool, best first."""
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, (name, _) in enumerate(ranking, 1):
            scores[name] = scores.get(name, 0.0) + 1.0 / (k + rank)
    return heapq.nlargest(limit, scores.items(), key=itemgetter(1))
