"""Feishu / Lark documents and their comments: ``feishu_doc_read``, ``feishu_drive_list_comments``,
``feishu_drive_list_comment_replies``, ``feishu_drive_reply_comment`` and ``feishu_drive_add_comment``.

All five act as the configured app (tenant access token, see ``_feishu_api``); the app must be allowed to see
the document (shared with it, or granted in the admin console).
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from hermes_core import CallContext, ToolError, ToolRegistry, Unavailable

from . import _feishu_api as api

if TYPE_CHECKING:
    from hermes_core import ToolSystem

TOOLSET = "feishu"
FILE_TYPES = ("docx", "doc", "sheet", "file")
MAX_DOC_CHARS = 100_000
_TOKEN = re.compile(r"^[A-Za-z0-9_-]{1,128}$")
_TOKEN_SCHEMA = {"type": "string", "pattern": _TOKEN.pattern, "description": "The file token (from its URL)."}
_COMMENT_SCHEMA = {"type": "string", "pattern": _TOKEN.pattern}
_FILE_TYPE_SCHEMA = {"type": "string", "enum": list(FILE_TYPES), "description": "Default docx."}
_PAGE = {
    "page_size": {"type": "integer", "minimum": 1, "maximum": 100, "description": "Default 50."},
    "page_token": {
        "type": "string",
        "maxLength": 512,
        "description": "From the previous page's next_page_token.",
    },
}


def check(system: ToolSystem) -> tuple[bool, str] | Unavailable:
    if api.configured(system):
        return True, ""
    return Unavailable(f"no Feishu app configured: {api.ENABLE}", by_design=True)  # opt-in: not a problem


def _token(value: str, what: str) -> str:
    if not _TOKEN.match(value):
        raise ToolError(f"{value!r} is not a Feishu {what}")
    return value


def _text(content: Any) -> str:
    """The plain text of a comment reply's ``content.elements``."""
    elements = content.get("elements") if isinstance(content, dict) else None
    out = []
    for element in elements if isinstance(elements, list) else []:
        if not isinstance(element, dict):
            continue
        kind = element.get("type")
        body = element.get(kind) if isinstance(kind, str) else None
        body = body if isinstance(body, dict) else {}
        if kind == "text_run":
            out.append(str(body.get("text", "")))
        elif kind == "docs_link":
            out.append(str(body.get("url", "")))
        elif kind == "person":
            out.append(f"@{body.get('user_id', '?')}")
    return "".join(out)


def _reply(item: Any) -> dict[str, Any]:
    if not isinstance(item, dict):
        raise ToolError("Feishu sent a malformed reply: a comment reply is not an object")
    return {
        "reply_id": item.get("reply_id"),
        "user_id": item.get("user_id"),
        "create_time": item.get("create_time"),
        "text": _text(item.get("content")),
    }


def _items(data: dict[str, Any], what: str) -> list[Any]:
    items = data.get("items", [])
    if items is None:
        return []
    if not isinstance(items, list):
        raise ToolError(f"Feishu sent a malformed reply to {what} ('items' is not a list)")
    return items


def _page(data: dict[str, Any], key: str, rows: list[dict[str, Any]]) -> str:
    more = data.get("has_more") is True
    out: dict[str, Any] = {key: rows, "has_more": more}
    if more and data.get("page_token"):
        out["next_page_token"] = data["page_token"]
    return json.dumps(out, ensure_ascii=False)


def _elements(content: str) -> dict[str, Any]:
    return {"elements": [{"type": "text_run", "text_run": {"text": content}}]}


# -- documents ----------------------------------------------------------------------------------------------


def _locate(document: str) -> tuple[str, str]:
    """``(kind, token)`` from a document URL or a bare token (docx)."""
    if "://" not in document:
        return "docx", _token(document.strip(), "document token")
    parts = [p for p in urlsplit(document).path.split("/") if p]
    for kind in ("docx", "wiki", "docs", "doc"):
        if kind in parts and parts.index(kind) + 1 < len(parts):
            return ("doc" if kind == "docs" else kind), _token(parts[parts.index(kind) + 1], "document token")
    raise ToolError("not a Feishu document URL (expected .../docx/<token> or .../wiki/<token>)")


def feishu_doc_read(document: str, *, context: CallContext) -> str:
    """The plain text of a docx (or legacy doc) document, by URL or token; wiki links are resolved."""
    kind, token = _locate(document)
    if kind == "wiki":
        node = api.request(
            context,
            "GET",
            "open-apis/wiki/v2/spaces/get_node",
            what="resolving the wiki link",
            params={"token": token},
        ).get("node")
        if not isinstance(node, dict) or not isinstance(node.get("obj_token"), str):
            raise ToolError("Feishu sent a malformed reply to resolving the wiki link (no node.obj_token)")
        kind, token = str(node.get("obj_type")), node["obj_token"]
        if kind not in ("docx", "doc"):
            raise ToolError(f"that wiki page is a {kind}, not a document; this tool reads docx and doc")
    path = (
        f"open-apis/docx/v1/documents/{token}/raw_content"
        if kind == "docx"
        else f"open-apis/doc/v2/{token}/raw_content"
    )
    data = api.request(
        context, "GET", path, what="reading the document", params={"lang": 0} if kind == "docx" else None
    )
    content = data.get("content")
    if not isinstance(content, str):
        raise ToolError("Feishu sent a malformed reply to reading the document (no text content)")
    if len(content) > MAX_DOC_CHARS:
        return content[:MAX_DOC_CHARS] + f"\n\n[cut at {MAX_DOC_CHARS} of {len(content)} characters]"
    return content or "(the document is empty)"


# -- comments -----------------------------------------------------------------------------------------------


def feishu_drive_list_comments(
    file_token: str,
    file_type: str = "docx",
    is_whole: bool | None = None,
    is_solved: bool | None = None,
    page_size: int = 50,
    page_token: str | None = None,
    *,
    context: CallContext,
) -> str:
    """One page of a file's comments, each with its replies' text."""
    params: dict[str, Any] = {"file_type": file_type, "user_id_type": "open_id", "page_size": page_size}
    if is_whole is not None:
        params["is_whole"] = str(is_whole).lower()
    if is_solved is not None:
        params["is_solved"] = str(is_solved).lower()
    if page_token:
        params["page_token"] = page_token
    what = "listing comments"
    data = api.request(
        context,
        "GET",
        f"open-apis/drive/v1/files/{_token(file_token, 'file token')}/comments",
        what=what,
        params=params,
    )
    rows = []
    for item in _items(data, what):
        if not isinstance(item, dict):
            raise ToolError(f"Feishu sent a malformed reply to {what} (a comment is not an object)")
        replies = (
            item.get("reply_list", {}).get("replies", []) if isinstance(item.get("reply_list"), dict) else []
        )
        rows.append(
            {
                "comment_id": item.get("comment_id"),
                "user_id": item.get("user_id"),
                "create_time": item.get("create_time"),
                "is_solved": item.get("is_solved"),
                "is_whole": item.get("is_whole"),
                "quote": item.get("quote"),
                "replies": [_reply(r) for r in replies if isinstance(replies, list)],
            }
        )
    return _page(data, "comments", rows)


def feishu_drive_list_comment_replies(
    file_token: str,
    comment_id: str,
    file_type: str = "docx",
    page_size: int = 50,
    page_token: str | None = None,
    *,
    context: CallContext,
) -> str:
    """One page of the replies in a comment thread."""
    params: dict[str, Any] = {"file_type": file_type, "user_id_type": "open_id", "page_size": page_size}
    if page_token:
        params["page_token"] = page_token
    what = "listing comment replies"
    path = (
        f"open-apis/drive/v1/files/{_token(file_token, 'file token')}/comments/"
        f"{_token(comment_id, 'comment id')}/replies"
    )
    data = api.request(context, "GET", path, what=what, params=params)
    return _page(data, "replies", [_reply(r) for r in _items(data, what)])


def feishu_drive_reply_comment(
    file_token: str, comment_id: str, content: str, file_type: str = "docx", *, context: CallContext
) -> str:
    """Add a reply (plain text) to a comment thread."""
    if not content.strip():
        raise ToolError("'content' is empty")
    path = (
        f"open-apis/drive/v1/files/{_token(file_token, 'file token')}/comments/"
        f"{_token(comment_id, 'comment id')}/replies"
    )
    data = api.request(
        context, "POST", path, what="replying to a comment", params={"file_type": file_type},
        json={"content": _elements(content)},
    )  # fmt: skip
    return f"Replied to comment {comment_id} (reply id {data.get('reply_id', '?')})."


def feishu_drive_add_comment(
    file_token: str, content: str, file_type: str = "docx", *, context: CallContext
) -> str:
    """Add a new comment on the whole document (plain text)."""
    if not content.strip():
        raise ToolError("'content' is empty")
    data = api.request(
        context,
        "POST",
        f"open-apis/drive/v1/files/{_token(file_token, 'file token')}/comments",
        what="adding a comment",
        params={"file_type": file_type, "user_id_type": "open_id"},
        json={"reply_list": {"replies": [{"content": _elements(content)}]}},
    )
    return f"Added comment {data.get('comment_id', '?')} to {file_token}."


_CONTENT = {"type": "string", "minLength": 1, "maxLength": 10_000, "description": "Plain text (no markdown)."}
_TOOLS: dict[str, tuple[Any, str, dict[str, Any], list[str]]] = {
    "feishu_doc_read": (
        feishu_doc_read,
        "Read a Feishu/Lark document as plain text, by URL (docx, doc or wiki link) or docx token.",
        {"document": {"type": "string", "minLength": 1, "maxLength": 2048}},
        ["document"],
    ),
    "feishu_drive_list_comments": (
        feishu_drive_list_comments,
        "List the comments on a Feishu/Lark document (one page, with each thread's replies). is_whole: only "
        "whole-document comments; is_solved filters resolved ones.",
        {
            "file_token": _TOKEN_SCHEMA,
            "file_type": _FILE_TYPE_SCHEMA,
            "is_whole": {"type": "boolean"},
            "is_solved": {"type": "boolean"},
            **_PAGE,
        },
        ["file_token"],
    ),
    "feishu_drive_list_comment_replies": (
        feishu_drive_list_comment_replies,
        "List the replies in one comment thread of a Feishu/Lark document (one page).",
        {"file_token": _TOKEN_SCHEMA, "comment_id": _COMMENT_SCHEMA, "file_type": _FILE_TYPE_SCHEMA, **_PAGE},
        ["file_token", "comment_id"],
    ),
    "feishu_drive_reply_comment": (
        feishu_drive_reply_comment,
        "Reply to a comment thread (e.g. a comment on quoted text) of a Feishu/Lark document.",
        {
            "file_token": _TOKEN_SCHEMA,
            "comment_id": _COMMENT_SCHEMA,
            "content": _CONTENT,
            "file_type": _FILE_TYPE_SCHEMA,
        },
        ["file_token", "comment_id", "content"],
    ),
    "feishu_drive_add_comment": (
        feishu_drive_add_comment,
        "Add a new comment on a whole Feishu/Lark document.",
        {"file_token": _TOKEN_SCHEMA, "content": _CONTENT, "file_type": _FILE_TYPE_SCHEMA},
        ["file_token", "content"],
    ),
}


def register(registry: ToolRegistry) -> None:
    for name, (handler, description, properties, required) in _TOOLS.items():
        registry.register(
            name=name,
            toolset=TOOLSET,
            schema={
                "name": name,
                "description": description,
                "parameters": {
                    "type": "object",
                    "properties": properties,
                    "required": required,
                    "additionalProperties": False,
                },
            },
            handler=handler,
            check_fn=check,
            emoji="📄" if name == "feishu_doc_read" else "💬",
            parallel_safe=name
            in ("feishu_doc_read", "feishu_drive_list_comments", "feishu_drive_list_comment_replies"),
            max_result_size_chars=MAX_DOC_CHARS + 1_000 if name == "feishu_doc_read" else None,
        )
