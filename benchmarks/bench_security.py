"""Security-layer figures: classify cost per command, redact cost (short and long), corpus recall and FP rate.

Run: .venv/bin/python benchmarks/bench_security.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "security"))

from security_corpus import load_corpus  # noqa: E402

from hermes_core.security import classify_command, redact  # noqa: E402


def load_independent(name: str) -> list[str]:
    """Lines of an independent corpus file (``#`` lines are comments; a TAB may precede a category)."""
    text = (ROOT / "tests" / "security" / "corpus" / name).read_text(encoding="utf-8")
    return [line for line in text.splitlines() if line.strip() and not line.startswith("#")]


def per_call(fn, arg, number: int) -> float:  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    for _ in range(number):
        fn(arg)
    return (time.perf_counter() - t0) / number


def rates(dangerous: list[str], ordinary: list[str]) -> tuple[float, float]:
    hit = sum(classify_command(c).dangerous for c in dangerous)
    fp = sum(classify_command(c).dangerous for c in ordinary)
    return hit / len(dangerous), fp / len(ordinary)


def bashlex_parse_rate(commands: list[str]) -> float:
    try:
        import bashlex
    except ImportError:
        return float("nan")
    ok = 0
    for cmd in commands:
        try:
            bashlex.parse(cmd)
            ok += 1
        except Exception:
            pass
    return ok / len(commands)


def main() -> None:
    dangerous, ordinary = load_corpus("dangerous.txt"), load_corpus("ordinary.txt")
    held_d, held_o = load_corpus("heldout_dangerous.txt"), load_corpus("heldout_ordinary.txt")
    everything = dangerous + ordinary
    t0 = time.perf_counter()
    for cmd in everything:
        classify_command(cmd)
    per_cmd = (time.perf_counter() - t0) / len(everything)
    print(
        f"classify_command: {per_cmd * 1e6:.1f} us per command (mean over {len(everything)} corpus commands)"
    )
    print(f"classify_command('ls -la'): {per_call(classify_command, 'ls -la', 2000) * 1e6:.1f} us")
    hostile = "echo " + "$(" * 5000
    print(f"classify_command(hostile 10k chars): {per_call(classify_command, hostile, 20) * 1e3:.2f} ms")

    sentence = (
        "The model replied with a summary of the build output and listed three failing tests in the suite."
    )
    print(f"redact('3'): {per_call(redact, '3', 200_000) * 1e9:.0f} ns")
    print(f"redact(100-char sentence): {per_call(redact, sentence, 200_000) * 1e9:.0f} ns")
    mixed = ("log line key=value token: abc Bearer abcdefgh1234 https://u:pw@host/x sk-notreal " * 13000)[
        :1_000_000
    ]
    print(f"redact(1 MB mixed): {per_call(redact, mixed, 3) * 1e3:.0f} ms")
    print(f"redact(2 MB mixed): {per_call(redact, mixed * 2, 3) * 1e3:.0f} ms")

    recall, fp = rates(dangerous, ordinary)
    print(
        f"corpus: recall {recall:.4f} over {len(dangerous)} dangerous, false positives {fp:.4f} over {len(ordinary)}"
    )
    recall, fp = rates(held_d, held_o)
    print(
        f"held-out: recall {recall:.4f} over {len(held_d)} dangerous, false positives {fp:.4f} over {len(held_o)}"
    )
    ind_d = [line.split("\t", 1)[0] for line in load_independent("independent_dangerous.txt")]
    ind_o = load_independent("independent_ordinary.txt")
    recall, fp = rates(ind_d, ind_o)
    print(
        f"independent: recall {recall:.4f} over {len(ind_d)} dangerous, false positives {fp:.4f} over {len(ind_o)}"
    )
    hostile_globs = " ; ".join(f"/???/?{chr(97 + i % 26)}{i} -x" for i in range(2000))
    print(
        f"classify_command(2000 distinct globbed names): {per_call(classify_command, hostile_globs, 3) * 1e3:.0f} ms"
    )
    print(
        f"bashlex parses {bashlex_parse_rate(everything):.3f} of the corpus (own parser: all, or fails closed)"
    )


if __name__ == "__main__":
    main()
