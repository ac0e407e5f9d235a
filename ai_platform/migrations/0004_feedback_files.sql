-- Label files ingested, by content (sha256 of the bytes): the same file dropped again is
-- recognized and adds nothing, and every file's rows are accounted for.
CREATE TABLE feedback_files (
    sha256       VARCHAR PRIMARY KEY,
    source_file  VARCHAR NOT NULL,  -- where it was first ingested from
    format       VARCHAR NOT NULL CHECK (format IN ('csv', 'jsonl', 'parquet')),
    encoding     VARCHAR,           -- utf-8 | gb18030 for text formats
    reader       VARCHAR NOT NULL,  -- duckdb | python (CSV), jsonl, parquet
    size_bytes   BIGINT  NOT NULL,
    rows_in      BIGINT  NOT NULL,
    accepted     BIGINT  NOT NULL,
    quarantined  BIGINT  NOT NULL,
    duplicates   BIGINT  NOT NULL,
    ingested_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    CHECK (rows_in = accepted + quarantined + duplicates)
);

-- feedback_labels loses its PRIMARY KEY and gains source_sha256 (which version of a file a
-- label came from). DuckDB's ART index made ingesting 900k labels ~6x slower (1.8 s insert +
-- 1.3 s commit vs 0.4 s) and the file ~6x larger. The key (generation_id, reviewer,
-- labeled_at) stays unique: the ingest, the table's one writer, dedupes against stored rows
-- and within each file under DuckDB's single-writer lock (ai_platform/feedback/validate.py).
-- DuckDB cannot drop a constraint, so the table is rebuilt; views rebind by name.
CREATE TABLE feedback_labels_0004 (
    generation_id  VARCHAR NOT NULL,
    reviewer       VARCHAR NOT NULL,
    label          VARCHAR NOT NULL CHECK (label IN ('correct', 'missed_risk', 'false_positive')),
    comment        VARCHAR,
    labeled_at     TIMESTAMPTZ NOT NULL,
    source_file    VARCHAR NOT NULL,
    source_line    BIGINT,
    ingested_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    source_sha256  VARCHAR
);
INSERT INTO feedback_labels_0004
    (generation_id, reviewer, label, comment, labeled_at, source_file, source_line, ingested_at)
SELECT generation_id, reviewer, label, comment, labeled_at, source_file, source_line, ingested_at
FROM feedback_labels;
DROP TABLE feedback_labels;
ALTER TABLE feedback_labels_0004 RENAME TO feedback_labels;
