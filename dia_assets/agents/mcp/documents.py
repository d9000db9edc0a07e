"""Short summaries of the workspace documents for an MCP host.

The interpretation, manifest and validation report run to 40-160 KB of JSON: too much to put
in a host's context by default. The fixed resources (`dia://interpretation`, ...) are these
summaries, computed from the document as the host may see it (after the privacy view), each
naming the resource template that serves the whole document (`dia://documents/{name}`) and
the tools that go deeper."""

from __future__ import annotations

from collections import Counter
from typing import Any

DOCUMENT_TEMPLATE = "dia://documents/{name}"
LISTED = 50  # entries a summary lists per kind (sources, tables, failed checks); the rest are counted


def document_uri(name: str) -> str:
    return DOCUMENT_TEMPLATE.replace("{name}", name)


def summary(name: str, data: dict[str, Any]) -> dict[str, Any]:
    """The summary of document `name` (interpretation, manifest or validation)."""
    body = {"interpretation": _interpretation, "manifest": _manifest, "validation": _validation}[name](data)
    return {"document": name, "generated_at": data.get("generated_at"), **body,
            "full_document": document_uri(name),
            "more": "relationships (foreign keys, join paths), describe_table (columns), lineage (sources)"}


def _interpretation(data: dict[str, Any]) -> dict[str, Any]:
    issues = Counter((i.get("severity"), i.get("kind")) for i in data.get("quality_issues", []))
    return {
        "sources": [{"name": s.get("name"), "file": s.get("path"), "format": s.get("format"),
                     "rows": s.get("row_count"), "columns": len(s.get("columns") or []),
                     "primary_key": (s.get("primary_key") or {}).get("columns")}
                    for s in data.get("sources", [])[:LISTED]],
        "sources_total": len(data.get("sources", [])),
        "foreign_keys": len(data.get("foreign_keys", [])),
        "join_paths": len(data.get("join_paths", [])),
        "quality_issues": [{"severity": sev, "kind": kind, "count": n}
                           for (sev, kind), n in sorted(issues.items(), key=lambda x: (str(x[0][0]), str(x[0][1])))],
    }


def _manifest(data: dict[str, Any]) -> dict[str, Any]:
    return {
        "dialect": data.get("dialect"),
        "tables": [{"name": t.get("name"), "file": t.get("source_path"), "source_rows": t.get("source_rows"),
                    "columns": len(t.get("columns") or []), "primary_key": t.get("primary_key"),
                    "foreign_keys": [f"{', '.join(k.get('columns', []))} -> {k.get('ref_table')}"
                                     for k in t.get("foreign_keys") or []]}
                   for t in data.get("tables", [])[:LISTED]],
        "tables_total": len(data.get("tables", [])),
        "decisions": len(data.get("decisions", [])),
        "skipped_sources": len(data.get("skipped_sources", [])),
        "unreadable_sources": len(data.get("unreadable_sources", [])),
    }


def _validation(data: dict[str, Any]) -> dict[str, Any]:
    failed = [{"check": section, "name": item.get("name") or item.get("table") or item.get("kind")}
              for section in ("row_counts", "column_coverage", "key_validity", "load_integrity", "test_queries")
              for item in data.get(section, []) if isinstance(item, dict) and item.get("passed") is False]
    return {
        "accepted": data.get("accepted"), "installed": data.get("installed"), "dialect": data.get("dialect"),
        "axes": {k: {"passed": v.get("passed"), "summary": v.get("summary")}
                 for k, v in (data.get("axes") or {}).items() if isinstance(v, dict)},
        "failed_checks": failed[:LISTED], "failed_total": len(failed),
        "open_questions": len(data.get("open_questions", [])),
    }
