"""Raw-file reading shared by the interpreter, the schema creator's loader and adaptation:
discovery and hashing, encodings, dialects, headers, rewrites DuckDB can read, record counts,
and the readers themselves. No interpretation logic (profiles, keys, semantics) lives here."""
