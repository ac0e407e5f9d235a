-- Labels whose generation_id is not logged yet: with several gateway replicas each writing its own
-- generations, a label can arrive before the row it names. Such a label is quarantined "for now" and
-- kept here, parsed; every ingest within the retry window (feedback/pending.py) looks again.
CREATE TABLE feedback_pending (
    generation_id  VARCHAR NOT NULL,
    reviewer       VARCHAR NOT NULL,
    label          VARCHAR NOT NULL,
    comment        VARCHAR,
    labeled_at     TIMESTAMPTZ NOT NULL,
    source_file    VARCHAR NOT NULL,
    source_sha256  VARCHAR NOT NULL,
    source_line    BIGINT  NOT NULL,
    first_seen_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);
