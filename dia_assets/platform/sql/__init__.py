"""SQL the agents share (design review 2026-12-02, §6.2): the one gate (`gate.py`, `safety.py`),
its per-dialect allow-lists (`allowlist/`), error redaction and SQL text helpers."""
