"""The providers' wire formats as their official SDKs define them: request bodies checked as strictly as the APIs
check them (every field known, every required field there, every literal right), from the SDKs' own parameter
types (``openai.types.chat.completion_create_params``, ``anthropic.types.message_create_params``).

``request_problems(body, anthropic=...)`` lists what is wrong with a request body (empty: valid).
"""

from __future__ import annotations

import collections.abc
import functools
import types
import typing
from typing import Any, Literal, NotRequired, Required, Union, get_args, get_origin

from anthropic.types import message_create_params
from openai.types.chat import completion_create_params
from typing_extensions import ReadOnly, is_typeddict

__all__ = ["request_problems"]

_WRAPPERS = {Required, NotRequired, ReadOnly, typing.Annotated}
_SEQUENCES = {list, collections.abc.Iterable, collections.abc.Sequence, tuple}
_MAPPINGS = {dict, collections.abc.Mapping}


def _strip(tp: Any) -> Any:
    while get_origin(tp) in _WRAPPERS:
        tp = get_args(tp)[0]
    return tp


@functools.cache
def _hints(td: Any) -> dict[str, Any]:
    return typing.get_type_hints(td, include_extras=True)


@functools.cache
def _required(td: Any) -> frozenset[str]:
    """The keys a TypedDict requires (its annotations are strings, so typing cannot tell by itself)."""
    out: set[str] = set()
    inherited: set[str] = set()
    for base in getattr(td, "__orig_bases__", ()):
        if is_typeddict(base):
            out |= _required(base)
            inherited |= set(_hints(base))
    total = getattr(td, "__total__", True)  # it holds for the keys this class declares itself
    for key, hint in _hints(td).items():
        wrapper = get_origin(hint)
        if wrapper is Required or (key not in inherited and total and wrapper is not NotRequired):
            out.add(key)
    return frozenset(out)


def _shape_fits(value: Any, tp: Any) -> bool:
    """Whether ``value`` has the broad shape of ``tp`` (object, list, string...), to pick a union's member."""
    tp = _strip(tp)
    origin = get_origin(tp)
    if is_typeddict(tp) or origin in _MAPPINGS or tp is dict:
        return isinstance(value, dict)
    if origin in _SEQUENCES or (origin is not None and getattr(origin, "__name__", "") == "SequenceNotStr"):
        return isinstance(value, list)
    if tp is str:
        return isinstance(value, str)
    return True


def _tags(tp: Any, key: str) -> tuple[Any, ...]:
    """The values a TypedDict's ``key`` field (``type``, ``role``) may take (empty when it is no literal)."""
    if not is_typeddict(tp):
        return ()
    hint = _strip(_hints(tp).get(key))
    return get_args(hint) if get_origin(hint) is Literal else ()


def problems(value: Any, tp: Any, path: str = "body") -> list[str]:
    """What makes ``value`` not a ``tp`` (a type of an SDK's parameters), as ``path: what`` lines."""
    tp = _strip(tp)
    if tp is Any or tp is object:
        return []
    if tp is type(None):
        return [] if value is None else [f"{path}: expected null, got {type(value).__name__}"]
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        alternatives = [alt for alt in get_args(tp) if _shape_fits(value, alt)] or list(get_args(tp))
        found = []
        for alt in alternatives:
            wrong = problems(value, alt, path)
            if not wrong:
                return []
            found.append((alt, wrong))
        for tag in ("type", "role"):  # a tagged union: report against the alternative the value names
            if isinstance(value, dict) and tag in value:
                named = [wrong for alt, wrong in found if value[tag] in _tags(_strip(alt), tag)]
                if named:
                    return min(named, key=len)
        return min((wrong for _, wrong in found), key=len)
    if origin is Literal:
        return [] if value in get_args(tp) else [f"{path}: {value!r} is not one of {list(get_args(tp))}"]
    if is_typeddict(tp):
        if not isinstance(value, dict):
            return [f"{path}: expected an object, got {type(value).__name__}"]
        hints = _hints(tp)
        extra_allowed = (getattr(tp, "__pydantic_config__", None) or {}).get("extra") == "allow"
        out = (
            []
            if extra_allowed
            else [f"{path}.{k}: Extra inputs are not permitted" for k in value if k not in hints]
        )
        out += [f"{path}.{key}: Field required" for key in _required(tp) if key not in value]
        for key, item in value.items():
            if key in hints:
                out += problems(item, hints[key], f"{path}.{key}")
        return out
    if origin in _SEQUENCES or (origin is not None and getattr(origin, "__name__", "") == "SequenceNotStr"):
        if not isinstance(value, list):
            return [f"{path}: expected a list, got {type(value).__name__}"]
        args = get_args(tp)
        item_type = args[0] if args else Any
        return [p for i, item in enumerate(value) for p in problems(item, item_type, f"{path}.{i}")]
    if origin in _MAPPINGS or tp is dict:
        if not isinstance(value, dict):
            return [f"{path}: expected an object, got {type(value).__name__}"]
        args = get_args(tp)
        return (
            [p for k, item in value.items() for p in problems(item, args[1], f"{path}.{k}")] if args else []
        )
    if tp is bool:
        return [] if isinstance(value, bool) else [f"{path}: expected a boolean"]
    if tp is int:
        return (
            [] if isinstance(value, int) and not isinstance(value, bool) else [f"{path}: expected an integer"]
        )
    if tp is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        return [] if ok else [f"{path}: expected a number"]
    if tp is str:
        return [] if isinstance(value, str) else [f"{path}: expected a string, got {type(value).__name__}"]
    return []  # files and other host-side types: nothing a JSON body can get wrong


def request_problems(body: dict[str, Any], *, anthropic: bool) -> list[str]:
    """What is wrong with a Messages (``anthropic``) or Chat Completions request body; empty when valid."""
    streaming = bool(body.get("stream"))
    if anthropic:
        module: Any = message_create_params
        params = module.MessageCreateParamsStreaming if streaming else module.MessageCreateParamsNonStreaming
    else:
        module = completion_create_params
        params = (
            module.CompletionCreateParamsStreaming if streaming else module.CompletionCreateParamsNonStreaming
        )
    found = problems(body, params)
    if not anthropic and not streaming and "stream_options" in body:
        found.append("body.stream_options: only allowed when stream is true")
    return found
