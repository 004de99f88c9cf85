"""Ranking tools for a query: the built-in lexical ranker (fielded BM25) and the ``Ranker`` seam plugins fill.

A ranker is made from the searchable tools of one selection (``ToolDoc``s) and answers ``search(query, limit)``
with ``(name, score)`` pairs, best first. The built-in ``BM25Ranker`` needs no model: it splits names into their
parts (``snake_case``, ``camelCase``, ``kebab-case``), folds word forms with a light stemmer (``creates``,
``created``, ``creating`` -> ``creat``), weighs a tool's name above its description and its parameters, and
widens the query with a short table of everyday synonyms (``remove`` also looks for ``delete``) at a lower
weight. Each posting's BM25 contribution is computed once when the index is built, so a query only adds up
numbers; terms found in a large share of the tools only re-score candidates the rarer terms found.

Plugins add rankers with the ``register_tool_rankers`` hook (an embedding ranker, say) and the configuration
chooses one, or several fused by reciprocal rank (``[tools] search_ranker``).
"""

from __future__ import annotations

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
    "who will with would you your want need let just also any all able using use via per than"
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


def terms(text: str) -> list[str]:
    """The stemmed terms of ``text``: words split at case changes, digits and punctuation, stop words out."""
    out = []
    for word in _WORDS.findall(text):
        word = word.lower()
        if word not in _STOP:
            out.append(stem(word))
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
    "note": ("memory", "observation"),
    "remember": ("memory", "save"),
    "forget": ("delete", "memory"),
    "schedule": ("cron", "job"),
    "later": ("schedule", "cron"),
    "every": ("cron", "schedule"),
    "spreadsheet": ("excel", "sheet", "workbook"),
    "sheet": ("worksheet",),
    "column": ("field",),
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
    "talk": ("message", "speech"),
    "ask": ("question", "clarify"),
    "user": ("member", "account"),
    "people": ("user", "member"),
    "person": ("user", "member"),
    "team": ("group",),
    "calendar": ("event",),
    "meeting": ("event",),
    "wiki": ("page",),
    "comment": ("reply", "note"),
    "label": ("tag",),
    "tag": ("label",),
}
_SYNONYM_STEMS: dict[str, tuple[str, ...]] = {
    stem(k): tuple(dict.fromkeys(stem(w) for w in v)) for k, v in _SYNONYMS.items()
}
_SYNONYM_WEIGHT = 0.35

# Field weights: a word in the name says most about what a tool does.
_NAME_WEIGHT = 3.0
_DESCRIPTION_WEIGHT = 1.0
_FIRST_SENTENCE_WEIGHT = 0.6  # on top of the description's: the summary says what the tool is for
_PARAM_NAME_WEIGHT = 0.6
_PARAM_DESCRIPTION_WEIGHT = 0.3
_GROUP_WEIGHT = 0.8  # toolset and source
_K1 = 1.2
_B = 0.6


def _first_sentence(text: str) -> str:
    cut = re.search(r"[.!?](\s|$)|\n", text)
    return text[: cut.start()] if cut else text


def _weighted_terms(doc: ToolDoc) -> dict[str, float]:
    tf: dict[str, float] = {}

    def add(text: str, weight: float) -> None:
        for term in terms(text):
            tf[term] = tf.get(term, 0.0) + weight

    add(doc.name, _NAME_WEIGHT)
    add(doc.description, _DESCRIPTION_WEIGHT)
    add(_first_sentence(doc.description), _FIRST_SENTENCE_WEIGHT)
    for name, description in doc.parameters:
        add(name, _PARAM_NAME_WEIGHT)
        if description:
            add(description, _PARAM_DESCRIPTION_WEIGHT)
    group = doc.toolset.removeprefix("mcp-")
    add(group, _GROUP_WEIGHT)
    if doc.source and doc.source != doc.toolset:
        add(doc.source, _GROUP_WEIGHT)
    return tf


class BM25Ranker:
    """Fielded BM25 over the tools' names, descriptions, parameters, toolsets and sources (see the module)."""

    name = "bm25"

    def __init__(self, docs: Sequence[ToolDoc]) -> None:
        self.names = [d.name for d in docs]
        weighted = [_weighted_terms(d) for d in docs]
        lengths = [sum(tf.values()) for tf in weighted]
        count = len(docs)
        average = (sum(lengths) / count) if count else 1.0
        frequency: dict[str, int] = {}
        for tf in weighted:
            for term in tf:
                frequency[term] = frequency.get(term, 0) + 1
        postings: dict[str, dict[int, float]] = {}
        for number, (tf, length) in enumerate(zip(weighted, lengths, strict=True)):
            norm = _K1 * (1 - _B + _B * length / average)
            for term, f in tf.items():
                df = frequency[term]
                idf = math.log(1 + (count - df + 0.5) / (df + 0.5))
                postings.setdefault(term, {})[number] = idf * f * (_K1 + 1) / (f + norm)
        self._postings = postings
        # a term in more tools than this only re-scores the candidates rarer terms found
        self._common = max(64, count // 8)

    def _query(self, query: str) -> dict[str, float]:
        wanted: dict[str, float] = {}
        for term in terms(query):
            wanted[term] = wanted.get(term, 0.0) + 1.0
        for term in list(wanted):
            for other in _SYNONYM_STEMS.get(term, ()):
                if other not in wanted:
                    wanted[other] = _SYNONYM_WEIGHT
        return wanted

    def search(self, query: str, limit: int) -> list[tuple[str, float]]:
        postings = self._postings
        found = [(postings[t], w) for t, w in self._query(query).items() if t in postings]
        if not found or limit < 1:
            return []
        found.sort(key=lambda item: len(item[0]))
        scores: dict[int, float] = {}
        common = self._common
        for plist, weight in found:
            if len(plist) > common and len(scores) >= limit:
                for doc in scores:
                    extra = plist.get(doc)
                    if extra is not None:
                        scores[doc] += extra * weight
            elif weight == 1.0:
                get = scores.get
                for doc, value in plist.items():
                    scores[doc] = get(doc, 0.0) + value
            else:
                get = scores.get
                for doc, value in plist.items():
                    scores[doc] = get(doc, 0.0) + value * weight
        best = heapq.nlargest(limit, scores.items(), key=itemgetter(1))
        names = self.names
        return [(names[doc], score) for doc, score in best]


def fuse(rankings: Iterable[list[tuple[str, float]]], limit: int, k: float = 60.0) -> list[tuple[str, float]]:
    """Reciprocal rank fusion of several rankers' answers: ``sum(1 / (k + rank))`` per tool, best first."""
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, (name, _) in enumerate(ranking, 1):
            scores[name] = scores.get(name, 0.0) + 1.0 / (k + rank)
    return heapq.nlargest(limit, scores.items(), key=itemgetter(1))
