"""Exports: a call as JSON, curl or a pytest file, a trace as JSONL, payloads or an HTML report (formats),
where a recorded call went (curl), and PII redaction with stable placeholders (redact)."""
