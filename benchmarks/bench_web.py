"""What the web tools cost: lazy imports, HTML to markdown, and the SSRF guard on each connection.

1. Import time of each library the web tools load on first call, in fresh processes interleaved with
   ``python -c pass``.
2. ``html_to_markdown`` on a ~1 MB page against a plain stdlib ``HTMLParser`` pass over the same page.
3. A GET to a local server through ``guarded_client`` (resolve + vet + connect to the vetted address) against a
   plain ``httpx.Client``, a new connection each time.

Run: ``python benchmarks/bench_web.py``.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from html.parser import HTMLParser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _util import median, run_ms

IMPORTS = {
    "markdownify + bs4 (web_extract, HTML)": "import markdownify, bs4",
    "pypdf (web_extract, PDF)": "import pypdf",
    "hermes_core.safehttp (httpx + guard)": "import hermes_core.safehttp",
    "playwright.async_api (browser)": "import playwright.async_api",
}


def imports(repeat: int) -> None:
    env = dict(os.environ)
    python = sys.executable
    bare: list[float] = []
    subjects: dict[str, list[float]] = {k: [] for k in IMPORTS}
    run_ms([python, "-c", "; ".join(IMPORTS.values())], env, 1)  # bytecode
    for _ in range(repeat):  # interleaved, so machine load hits both sides alike
        bare += run_ms([python, "-c", "pass"], env, 1)
        for name, code in IMPORTS.items():
            subjects[name] += run_ms([python, "-c", code], env, 1)
    b = median(bare)
    print(f"python -c pass: min {min(bare):.1f} ms, median {b:.1f} ms (n={repeat})")
    for name, times in subjects.items():
        m = median(times)
        print(f"  {name:40s} min {min(times):6.1f} ms  median {m:6.1f} ms  (+{m - b:.1f} ms, {m / b:.2f}x)")


def page(paragraphs: int = 2500) -> str:
    rows = "".join(
        f"<p>Paragraph {i} with <a href='/l/{i}'>a link</a>, <b>bold</b> and <i>italic</i> text. "
        + "Lorem ipsum dolor sit amet. " * 6
        + "</p>"
        + (f"<h2>Section {i}</h2><ul><li>one</li><li>two</li></ul>" if i % 50 == 0 else "")
        for i in range(paragraphs)
    )
    return f"<html><head><title>Big</title><script>var x = 1;</script></head><body><nav>menu</nav><main>{rows}</main></body></html>"


def conversion(repeat: int) -> None:
    from hermes_builtin.tools.web._web_extract import html_to_markdown

    markup = page()
    base, subject = [], []
    for _ in range(repeat):
        start = time.perf_counter()
        HTMLParser().feed(markup)
        base.append((time.perf_counter() - start) * 1000)
        start = time.perf_counter()
        html_to_markdown(markup, "https://example.org/")
        subject.append((time.perf_counter() - start) * 1000)
    b, s = median(base), median(subject)
    print(f"HTML page of {len(markup) / 1e6:.2f} MB:")
    print(f"  stdlib HTMLParser pass   min {min(base):7.1f} ms  median {b:7.1f} ms")
    print(f"  html_to_markdown         min {min(subject):7.1f} ms  median {s:7.1f} ms  ({s / b:.1f}x)")


class _Quiet(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args: object) -> None:
        pass


def guard(repeat: int) -> None:
    import httpx

    from hermes_core.safehttp import guarded_client
    from hermes_core.security import NetworkPolicy

    server = ThreadingHTTPServer(("127.0.0.1", 0), _Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://localhost:{server.server_address[1]}/"
    policy = NetworkPolicy.from_config({"allow_networks": ["127.0.0.1/32", "::1"]})
    plain_times, guarded_times = [], []
    with httpx.Client(trust_env=False) as plain, guarded_client(policy) as guarded:
        for client in (plain, guarded):
            client.get(url)
        for _ in range(repeat):
            start = time.perf_counter()
            plain.get(url)
            plain_times.append((time.perf_counter() - start) * 1e6)
            start = time.perf_counter()
            guarded.get(url)
            guarded_times.append((time.perf_counter() - start) * 1e6)
    server.shutdown()
    p, g = median(plain_times), median(guarded_times)
    print("GET http://localhost (new connection each time):")
    print(f"  httpx.Client             min {min(plain_times):7.0f} us  median {p:7.0f} us")
    print(f"  guarded_client           min {min(guarded_times):7.0f} us  median {g:7.0f} us  ({g / p:.2f}x)")


if __name__ == "__main__":
    imports(repeat=9)
    conversion(repeat=5)
    guard(repeat=300)
