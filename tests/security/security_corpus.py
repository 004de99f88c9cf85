"""Loading the command corpus files (shared by the tests and the benchmark)."""

from __future__ import annotations

from pathlib import Path

CORPUS = Path(__file__).parent / "corpus"


def load_corpus(name: str) -> list[str]:
    """Commands of a corpus file: one per line, ``<NL>`` is a newline, ``# `` lines are comments."""
    lines = (CORPUS / name).read_text(encoding="utf-8").splitlines()
    return [line.replace("<NL>", "\n") for line in lines if line.strip() and not line.startswith("# ")]
