"""The Feishu/Lark tools against a local server speaking the open API: the tenant access token (cached, renewed
before expiry and once on an auth error), documents, and drive comments with paging."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from hermes_core import ToolSystem

Configure = Callable[..., ToolSystem]
APP_ID = "cli_a1b2c3d4e5f6"
SECRET = "feishu-app-secret-for-tests-161803"
TOKEN_PATH = "/open-apis/auth/v3/tenant_access_token/internal"
DOC = "doxcnAbCdEfGh123"


class TokenIssuer:
    """The token endpoint: checks the app credentials, hands out t-1, t-2, ... with the given lifetime."""

    def __init__(self, expire: int = 7200) -> None:
        self.expire = expire
        self.issued = 0

    def __call__(self, request: Request) -> Response:
        if request.get_json() != {"app_id": APP_ID, "app_secret": SECRET}:
            body = {"code": 10014, "msg": f"app secret invalid: {request.get_json().get('app_secret')}"}
        else:
            self.issued += 1
            body = {"code": 0, "msg": "ok", "tenant_access_token": f"t-{self.issued}", "expire": self.expire}
        return Response(json.dumps(body), content_type="application/json")


def _ok(data: dict[str, Any]) -> dict[str, Any]:
    return {"code": 0, "msg": "success", "data": data}


def _text(text: str) -> dict[str, Any]:
    return {"elements": [{"type": "text_run", "text_run": {"text": text}}]}


def _system(
    configure: Configure, base: str, secret: Callable[[str], Any], app_secret: str = SECRET
) -> ToolSystem:
    return configure(feishu={"app_id": APP_ID, "app_secret": secret(app_secret), "base_url": base})


def _tokens_used(httpserver: HTTPServer) -> list[str]:
    return [r.headers.get("Authorization", "") for r, _ in httpserver.log if r.path != TOKEN_PATH]


def test_doc_read_with_a_cached_token(
    configure: Configure, base: str, secret: Callable[[str], Any], httpserver: HTTPServer
) -> None:
    issuer = TokenIssuer()
    httpserver.expect_request(TOKEN_PATH, method="POST").respond_with_handler(issuer)
    httpserver.expect_request(
        f"/open-apis/docx/v1/documents/{DOC}/raw_content", query_string={"lang": "0"}
    ).respond_with_json(_ok({"content": "Quarterly plan\nShip the thing.\n"}))
    system = _system(configure, base, secret)
    assert system.call("feishu_doc_read", {"document": DOC}) == "Quarterly plan\nShip the thing.\n"
    url = f"https://example.feishu.cn/docx/{DOC}?from=share"
    assert system.call("feishu_doc_read", {"document": url}).startswith("Quarterly plan")
    assert issuer.issued == 1 and _tokens_used(httpserver) == ["Bearer t-1", "Bearer t-1"]


def test_wiki_links_and_legacy_docs(
    configure: Configure, base: str, secret: Callable[[str], Any], httpserver: HTTPServer
) -> None:
    httpserver.expect_request(TOKEN_PATH).respond_with_handler(TokenIssuer())
    httpserver.expect_request(
        "/open-apis/wiki/v2/spaces/get_node", query_string={"token": "wikcnXYZ"}
    ).respond_with_json(_ok({"node": {"obj_token": DOC, "obj_type": "docx", "title": "Plan"}}))
    httpserver.expect_request(f"/open-apis/docx/v1/documents/{DOC}/raw_content").respond_with_json(
        _ok({"content": "from the wiki"})
    )
    httpserver.expect_request("/open-apis/doc/v2/doccnOld/raw_content").respond_with_json(
        _ok({"content": "old doc"})
    )
    httpserver.expect_request(
        "/open-apis/wiki/v2/spaces/get_node", query_string={"token": "wikcnSheet"}
    ).respond_with_json(_ok({"node": {"obj_token": "shtcn1", "obj_type": "sheet"}}))
    system = _system(configure, base, secret)
    assert (
        system.call("feishu_doc_read", {"document": "https://x.feishu.cn/wiki/wikcnXYZ"}) == "from the wiki"
    )
    assert system.call("feishu_doc_read", {"document": "https://x.feishu.cn/docs/doccnOld"}) == "old doc"
    sheet = system.call_outcome("feishu_doc_read", {"document": "https://x.feishu.cn/wiki/wikcnSheet"})
    assert "that wiki page is a sheet" in sheet.result
    elsewhere = system.call_outcome("feishu_doc_read", {"document": "https://example.com/blog/post"})
    assert "not a Feishu document URL" in elsewhere.result


def test_token_is_renewed_before_it_expires(
    configure: Configure, base: str, secret: Callable[[str], Any], httpserver: HTTPServer
) -> None:
    issuer = TokenIssuer(expire=200)  # less than the renewal margin: every call renews
    httpserver.expect_request(TOKEN_PATH).respond_with_handler(issuer)
    httpserver.expect_request(f"/open-apis/docx/v1/documents/{DOC}/raw_content").respond_with_json(
        _ok({"content": "x"})
    )
    system = _system(configure, base, secret)
    system.call("feishu_doc_read", {"document": DOC})
    system.call("feishu_doc_read", {"document": DOC})
    assert issuer.issued == 2 and _tokens_used(httpserver) == ["Bearer t-1", "Bearer t-2"]


def test_an_auth_error_renews_the_token_once(
    configure: Configure, base: str, secret: Callable[[str], Any], httpserver: HTTPServer
) -> None:
    issuer = TokenIssuer()
    httpserver.expect_request(TOKEN_PATH).respond_with_handler(issuer)
    path = f"/open-apis/docx/v1/documents/{DOC}/raw_content"
    httpserver.expect_oneshot_request(path).respond_with_json(
        {"code": 99991663, "msg": "Invalid access token for authorization."}, status=400
    )
    httpserver.expect_oneshot_request(path).respond_with_json(_ok({"content": "after renewal"}))
    system = _system(configure, base, secret)
    assert system.call("feishu_doc_read", {"document": DOC}) == "after renewal"
    assert _tokens_used(httpserver) == ["Bearer t-1", "Bearer t-2"]
    httpserver.expect_request(path).respond_with_json(
        {"code": 99991663, "msg": "Invalid access token"}, status=400
    )
    twice = system.call_outcome("feishu_doc_read", {"document": DOC})
    assert twice.status == "error" and "rejected the app's access token" in twice.result
    assert issuer.issued == 3  # one renewal per failing call (t-2 cached, then t-3), no loop


def test_bad_app_credentials_never_show_the_secret(
    configure: Configure,
    base: str,
    secret: Callable[[str], Any],
    httpserver: HTTPServer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    wrong = "wrong-app-secret-for-tests-000111"
    httpserver.expect_request(TOKEN_PATH).respond_with_handler(TokenIssuer())
    outcome = _system(configure, base, secret, app_secret=wrong).call_outcome(
        "feishu_doc_read", {"document": DOC}
    )
    assert outcome.status == "error" and "rejected the app credentials (code 10014" in outcome.result
    assert "[plugins.feishu] app_id and app_secret" in outcome.result
    logged = "\n".join(r.getMessage() for r in caplog.records if not r.name.startswith("werkzeug"))
    assert wrong not in outcome.result and wrong not in logged


def test_comments_are_paged_and_replies_flattened(
    configure: Configure, base: str, secret: Callable[[str], Any], httpserver: HTTPServer
) -> None:
    httpserver.expect_request(TOKEN_PATH).respond_with_handler(TokenIssuer())
    comment = {
        "comment_id": "6916106822734578184",
        "user_id": "ou_1",
        "create_time": 1700000000,
        "is_solved": False,
        "is_whole": False,
        "quote": "Ship the thing.",
        "reply_list": {
            "replies": [
                {
                    "reply_id": "6916106822734594568",
                    "user_id": "ou_1",
                    "create_time": 1700000000,
                    "content": {
                        "elements": [
                            {"type": "text_run", "text_run": {"text": "When? "}},
                            {"type": "person", "person": {"user_id": "ou_2"}},
                        ]
                    },
                }
            ]
        },
    }

    def comments(request: Request) -> Response:
        assert request.args["file_type"] == "docx" and request.args["user_id_type"] == "open_id"
        if request.args.get("page_token") == "p2":
            body = _ok(
                {"has_more": False, "items": [{**comment, "comment_id": "2", "reply_list": {"replies": []}}]}
            )
        else:
            body = _ok({"has_more": True, "page_token": "p2", "items": [comment]})
        return Response(json.dumps(body), content_type="application/json")

    httpserver.expect_request(f"/open-apis/drive/v1/files/{DOC}/comments", method="GET").respond_with_handler(
        comments
    )
    system = _system(configure, base, secret)
    first = json.loads(system.call("feishu_drive_list_comments", {"file_token": DOC, "page_size": 1}))
    assert first["has_more"] is True and first["next_page_token"] == "p2"
    (item,) = first["comments"]
    assert item["quote"] == "Ship the thing." and item["replies"][0]["text"] == "When? @ou_2"
    second = json.loads(
        system.call("feishu_drive_list_comments", {"file_token": DOC, "page_size": 1, "page_token": "p2"})
    )
    assert (
        second["has_more"] is False
        and "next_page_token" not in second
        and second["comments"][0]["comment_id"] == "2"
    )


def test_replies_reply_and_add_comment(
    configure: Configure, base: str, secret: Callable[[str], Any], httpserver: HTTPServer
) -> None:
    httpserver.expect_request(TOKEN_PATH).respond_with_handler(TokenIssuer())
    replies = f"/open-apis/drive/v1/files/{DOC}/comments/6916/replies"
    httpserver.expect_request(
        replies,
        method="GET",
        query_string={"file_type": "docx", "user_id_type": "open_id", "page_size": "50"},
    ).respond_with_json(
        _ok({"has_more": False, "items": [{"reply_id": "r1", "user_id": "ou_1", "content": _text("first")}]})
    )
    httpserver.expect_request(
        replies, method="POST", query_string={"file_type": "docx"}, json={"content": _text("Done, see v2.")}
    ).respond_with_json(_ok({"reply_id": "r2", "content": _text("Done, see v2.")}))
    httpserver.expect_request(
        f"/open-apis/drive/v1/files/{DOC}/comments",
        method="POST",
        json={"reply_list": {"replies": [{"content": _text("Looks good overall.")}]}},
    ).respond_with_json(_ok({"comment_id": "c9", "is_whole": True}))
    system = _system(configure, base, secret)
    listed = json.loads(
        system.call("feishu_drive_list_comment_replies", {"file_token": DOC, "comment_id": "6916"})
    )
    assert listed == {
        "replies": [{"reply_id": "r1", "user_id": "ou_1", "create_time": None, "text": "first"}],
        "has_more": False,
    }
    replied = system.call(
        "feishu_drive_reply_comment", {"file_token": DOC, "comment_id": "6916", "content": "Done, see v2."}
    )
    assert replied == "Replied to comment 6916 (reply id r2)."
    added = system.call("feishu_drive_add_comment", {"file_token": DOC, "content": "Looks good overall."})
    assert added == f"Added comment c9 to {DOC}."
    post = next(r for r, _ in httpserver.log if r.method == "POST" and r.path.endswith("/comments"))
    assert post.args["file_type"] == "docx"


def test_rate_limits_scopes_and_malformed_replies(
    configure: Configure, base: str, secret: Callable[[str], Any], httpserver: HTTPServer
) -> None:
    httpserver.expect_request(TOKEN_PATH).respond_with_handler(TokenIssuer())
    path = f"/open-apis/docx/v1/documents/{DOC}/raw_content"
    httpserver.expect_oneshot_request(path).respond_with_json(
        {"code": 99991400, "msg": "request trigger frequency limit"},
        status=429,
        headers={"x-ogw-ratelimit-reset": "0"},
    )
    httpserver.expect_oneshot_request(path).respond_with_json(_ok({"content": "ok after the limit"}))
    system = _system(configure, base, secret)
    assert system.call("feishu_doc_read", {"document": DOC}) == "ok after the limit"
    httpserver.expect_oneshot_request(path).respond_with_json(
        {"code": 99991672, "msg": "Access denied. One of the following scopes is required: [docx:document]"},
        status=400,
    )
    scope = system.call_outcome("feishu_doc_read", {"document": DOC})
    assert "code 99991672" in scope.result and "lacks a permission (scope)" in scope.result
    httpserver.expect_oneshot_request(path).respond_with_json(_ok({"text": "wrong field"}))
    assert "malformed reply to reading the document" in system.call("feishu_doc_read", {"document": DOC})
    httpserver.expect_oneshot_request(path).respond_with_json({"data": {"content": "no code"}})
    assert "no 'code' in it" in system.call("feishu_doc_read", {"document": DOC})
    httpserver.expect_oneshot_request(path).respond_with_data("upstream down", status=503)
    assert "server error" in system.call("feishu_doc_read", {"document": DOC})


def test_hidden_without_an_app(configure: Configure, secret: Callable[[str], Any]) -> None:
    ok, reason = configure().availability_of("feishu_drive_add_comment")
    assert not ok and '[plugins.feishu] app_id = "cli_..."' in reason and "FEISHU_APP_SECRET" in reason
    half = configure(feishu={"app_id": APP_ID})
    assert not half.availability_of("feishu_doc_read")[0]
