"""Recall and false-positive rate of the command guard over the corpus files."""

from __future__ import annotations

from security_corpus import load_corpus

from hermes_core.security import classify_command


def test_corpus_sizes() -> None:
    assert len(load_corpus("dangerous.txt")) >= 300
    assert len(load_corpus("ordinary.txt")) >= 300


def test_recall_and_false_positive_rate() -> None:
    dangerous = load_corpus("dangerous.txt")
    ordinary = load_corpus("ordinary.txt")
    missed = [c for c in dangerous if not classify_command(c, workspace="/work/project").dangerous]
    flagged = [c for c in ordinary if classify_command(c, workspace="/work/project").dangerous]
    recall = 1 - len(missed) / len(dangerous)
    fp_rate = len(flagged) / len(ordinary)
    print(
        f"\nrecall {recall:.4f} ({len(dangerous)} dangerous), false positives {fp_rate:.4f} ({len(ordinary)} ordinary)"
    )
    assert recall >= 0.99, f"missed: {missed}"
    assert fp_rate <= 0.01, f"flagged: {flagged}"


def test_every_dangerous_verdict_explains_itself() -> None:
    for cmd in load_corpus("dangerous.txt")[:120]:
        verdict = classify_command(cmd)
        assert verdict.findings and all(f.category and f.reason for f in verdict.findings), cmd
        assert verdict.reasons
