-- feedback_quarantine loses its PRIMARY KEY (source_sha256, source_line), as feedback_labels
-- did in 0004. Its ART index was half of what quarantining 70k rows cost (0.06 of 0.11 s on
-- insert, 0.03 s more at commit) and 44% of the table on disk. The key stays unique: the
-- ingest, the table's one writer, writes each file version's rows once, in one transaction,
-- after checking feedback_files for its sha256 under DuckDB's single-writer lock.
-- DuckDB cannot drop a constraint, so the table is rebuilt; no view reads it.
CREATE TABLE feedback_quarantine_0005 (
    source_file    VARCHAR NOT NULL,
    source_sha256  VARCHAR NOT NULL,
    source_line    BIGINT  NOT NULL,
    reason         VARCHAR NOT NULL,
    raw            VARCHAR,
    ingested_at    TIMESTAMPTZ NOT NULL DEFAULT now()
);
INSERT INTO feedback_quarantine_0005 SELECT source_file, source_sha256, source_line, reason, raw, ingested_at
FROM feedback_quarantine;
DROP TABLE feedback_quarantine;
ALTER TABLE feedback_quarantine_0005 RENAME TO feedback_quarantine;
