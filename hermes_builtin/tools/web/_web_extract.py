"""Fetching a page for ``web_extract`` and turning it into text: HTML to markdown, PDF to text, text as is.

The fetch goes through ``hermes_core.safehttp`` (every hop vetted by the network policy); redirects are
followed here one by one so the limit and each hop's refusal are reported. Bodies are streamed and cut off
at ``max_bytes``. The HTML (BeautifulSoup + markdownify) and PDF (pypdf) libraries load on first use.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit

from hermes_core import ToolError

from ._web_settings import WebSettings

if TYPE_CHECKING:
    import httpx

HTML_TYPES = ("text/html", "application/xhtml+xml")
TEXT_TYPES = ("text/", "application/json", "application/xml", "application/javascript", "application/x-yaml")
MAX_PDF_PAGES = 500
# Removed with their content: code, embedded objects and page chrome (navigation, footers, sidebars).
_DROP = frozenset(
    {"script", "style", "noscript", "template", "svg", "canvas", "iframe", "object", "embed", "head"}
    | {"nav", "footer", "aside"}
)
_CHROME_ROLES = frozenset(("navigation", "banner", "contentinfo", "complementary", "search"))
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.IGNORECASE)
_BLANKS = re.compile(r"\n{3,}")


@dataclass(frozen=True, slots=True)
class Page:
    """A fetched document as text: where it ended up, its title and type, the hops that led there."""

    url: str
    final_url: str
    title: str
    content_type: str
    text: str
    redirects: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Download:
    """A fetched body with where it ended up and the redirects that led there."""

    url: str
    final_url: str
    content_type: str
    charset: str | None
    body: bytes
    redirects: tuple[str, ...] = ()


def download(client: httpx.Client, settings: WebSettings, url: str, max_bytes: int | None = None) -> Download:
    """GET ``url`` following up to ``max_redirects`` redirects, each hop vetted; ``ToolError`` on failure."""
    import httpx

    from hermes_core.safehttp import BlockedRequestError

    limit = max_bytes or settings.max_bytes
    hops: list[str] = []
    current = url
    for _ in range(settings.max_redirects + 1):
        try:
            with client.stream("GET", current, follow_redirects=False) as response:
                if response.is_redirect:
                    target = response.headers.get("location", "")
                    nxt = urljoin(current, target)
                    if urlsplit(nxt).scheme not in ("http", "https"):
                        raise ToolError(f"{current} redirects to {target!r}, which is not an http(s) URL")
                    hops.append(current)
                    current = nxt
                    continue
                if response.status_code >= 400:
                    raise ToolError(
                        f"{current} answered HTTP {response.status_code} {response.reason_phrase}"
                    )
                ctype = response.headers.get("content-type", "").split(";")[0].strip().lower()
                body = _read_limited(response, limit, current)
                return Download(url, current, ctype, response.charset_encoding, body, tuple(hops))
        except BlockedRequestError as err:
            hop = f" (redirected from {hops[-1]})" if hops else ""
            raise ToolError(f"refused to fetch {current}{hop}: {err.reason}", retryable=False) from None
        except httpx.TimeoutException:
            raise ToolError(f"{current} did not answer within {settings.timeout:g} s") from None
        except httpx.InvalidURL as err:
            raise ToolError(f"not a usable URL: {current} ({err})", retryable=False) from None
        except httpx.HTTPError as err:
            raise ToolError(f"could not fetch {current}: {type(err).__name__}: {err}") from None
    raise ToolError(f"{url}: more than {settings.max_redirects} redirects (last: {current})")


def fetch(client: httpx.Client, settings: WebSettings, url: str) -> Page:
    """Download ``url`` and convert it to text (see ``convert``)."""
    got = download(client, settings, url)
    title, text, kind = convert(got.body, got.content_type, got.charset, got.final_url)
    return Page(url, got.final_url, title, kind, text, got.redirects)


def _read_limited(response: httpx.Response, limit: int, url: str) -> bytes:
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise ToolError(f"{url} is {int(declared):,} bytes, over the {limit:,} byte limit", retryable=False)
    chunks: list[bytes] = []
    size = 0
    for chunk in response.iter_bytes():
        size += len(chunk)
        if size > limit:
            raise ToolError(f"{url} is larger than the {limit:,} byte limit", retryable=False)
        chunks.append(chunk)
    return b"".join(chunks)


def _sniff(body: bytes, ctype: str) -> str:
    head = body[:1024].lstrip().lower()
    if body.startswith(b"%PDF-"):
        return "application/pdf"
    if ctype in ("", "application/octet-stream", "binary/octet-stream"):
        if head.startswith((b"<!doctype html", b"<html")) or b"<body" in head:
            return "text/html"
        if b"\x00" not in body[:2048]:
            try:
                body[:4096].decode("utf-8")
                return "text/plain"
            except UnicodeDecodeError:
                pass
    return ctype


def _decode(body: bytes, charset: str | None, html_doc: bool) -> str:
    if not charset and html_doc:
        found = _META_CHARSET.search(body[:4096])
        charset = found.group(1).decode("ascii") if found else None
    for enc in (charset, "utf-8"):
        if enc:
            try:
                return body.decode(enc)
            except (LookupError, UnicodeDecodeError):
                continue
    return body.decode("cp1252", "replace")


def convert(body: bytes, ctype: str, charset: str | None, url: str) -> tuple[str, str, str]:
    """``(title, text, kind)`` for a fetched body; ``ToolError`` for content that is not text."""
    kind = _sniff(body, ctype)
    if kind == "application/pdf":
        title, text = pdf_to_text(body, url)
        return title, text, kind
    if kind in HTML_TYPES:
        title, text = html_to_markdown(_decode(body, charset, True), url)
        return title, text, kind
    if kind.startswith(TEXT_TYPES) or kind.endswith(("+json", "+xml")):
        text = _decode(body, charset, False)
        if "json" in kind:
            try:
                text = json.dumps(json.loads(text), indent=1, ensure_ascii=False)
            except ValueError:
                pass
        return "", text, kind
    hint = "; use vision_analyze for images" if kind.startswith("image/") else ""
    raise ToolError(
        f"{url} is {kind or 'binary data'} ({len(body):,} bytes), not text{hint}", retryable=False
    )


def html_to_markdown(markup: str, base_url: str) -> tuple[str, str]:
    """Clean markdown of a page's main content (scripts, navigation and hidden parts removed)."""
    from bs4 import BeautifulSoup
    from markdownify import MarkdownConverter

    soup = BeautifulSoup(markup, "html.parser")
    title = soup.title.get_text(" ", strip=True) if soup.title else ""
    # one pass over the tags (CSS selectors cost more than the whole conversion on large pages)
    for tag in soup.find_all(True):
        if tag.decomposed:
            continue
        attrs = tag.attrs
        if (
            tag.name in _DROP
            or "hidden" in attrs
            or attrs.get("aria-hidden") == "true"
            or attrs.get("role") in _CHROME_ROLES
        ):
            tag.decompose()
        elif tag.name == "a" and "href" in attrs:
            href = str(attrs["href"]).strip()
            if href.lower().startswith(("javascript:", "data:")):
                tag.unwrap()
            else:
                attrs["href"] = urljoin(base_url, href)
        elif tag.name == "img":
            src = str(attrs.get("src") or "").strip()
            if not src or src.lower().startswith("data:"):
                tag.decompose()
            else:
                attrs["src"] = urljoin(base_url, src)
    articles = soup.find_all("article")
    root: Any = soup.find("main") or (articles[0] if len(articles) == 1 else None) or soup.body or soup
    converter = MarkdownConverter(
        heading_style="ATX", bullets="-", escape_underscores=False, escape_misc=False
    )
    text = converter.convert_soup(root)
    lines = [line.rstrip() for line in text.splitlines()]
    return title, _BLANKS.sub("\n\n", "\n".join(lines)).strip()


def pdf_to_text(data: bytes, url: str) -> tuple[str, str]:
    """The text of each page of a PDF under a ``## Page N`` heading, and its title."""
    import io

    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise ToolError(
                f"{url} is an encrypted PDF; it cannot be read without its password", retryable=False
            )
        meta = reader.metadata
        title = str(meta.title) if meta is not None and meta.title else ""
        parts = []
        total = len(reader.pages)
        for number, page in enumerate(reader.pages[:MAX_PDF_PAGES], 1):
            text = (page.extract_text() or "").strip()
            parts.append(f"## Page {number}\n\n{text or '(no text on this page)'}")
    except ToolError:
        raise
    except (PdfReadError, ValueError, KeyError, TypeError) as err:
        raise ToolError(
            f"{url} is not a readable PDF ({type(err).__name__}: {err})", retryable=False
        ) from None
    if total > MAX_PDF_PAGES:
        parts.append(f"(the PDF has {total} pages; the text of the first {MAX_PDF_PAGES} is shown)")
    return title, "\n\n".join(parts)


def render_page(page: Page, offset: int, max_chars: int, again: str = "") -> str:
    """One page of the extracted text with a header and, when there is more, the offset to ask for next
    (``again`` names what else the next call needs, such as the one URL of several)."""
    total = len(page.text)
    if total and offset >= total:
        raise ToolError(f"offset {offset} is past the end: the text has {total:,} characters")
    chunk = page.text[offset : offset + max_chars]
    end = offset + len(chunk)
    if end < total:  # cut at a line break when one is near, so the next page starts cleanly
        cut = chunk.rfind("\n", max(0, len(chunk) - 2000))
        if cut > 0:
            chunk = chunk[:cut]
            end = offset + cut
    head = [f"URL: {page.final_url}"]
    if page.redirects:
        head[0] += f" (redirected from {page.url})"
    if page.title:
        head.insert(0, f"Title: {page.title}")
    head.append(f"Type: {page.content_type}")
    body = chunk if chunk.strip() else "(no text content)"
    tail = ""
    if end < total:
        tail = f"\n\n[characters {offset:,}-{end:,} of {total:,}; call web_extract with {again}offset={end} for more]"
    elif offset:
        tail = f"\n\n[characters {offset:,}-{end:,} of {total:,}; end of text]"
    return "\n".join(head) + "\n\n" + body + tail
