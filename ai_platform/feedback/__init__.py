"""Reviewer labels: label files from the inbox into `feedback_labels`, bad rows into `feedback_quarantine`.

Entry points: `ai_platform.feedback.ingest.ingest` / `ingest_file` (and `FileReport`),
`ai_platform.feedback.inbox` for watching the inbox folder.
"""
