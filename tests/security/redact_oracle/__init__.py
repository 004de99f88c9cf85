"""A frozen copy of the redactor as it was before issue 26's speed work (``hermes_core/security/_redact.py``
and ``_redact_forms.py`` at baefb89), kept verbatim as the oracle of the differential test
(``test_redact_differential.py``) and as the baseline of ``benchmarks/bench_redact.py``. Not used elsewhere."""

from ._redact import redact

__all__ = ["redact"]
