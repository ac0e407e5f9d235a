-- A fourth label, `incorrect`: wrong in a way `missed_risk` and `false_positive` do not name (a classifier's
-- wrong class, a wrong extracted field), for models whose task has no risk points (the demo's clause classifier).
-- DuckDB cannot change a CHECK constraint, so the table is rebuilt as 0004 did; views rebind by name.
CREATE TABLE feedback_labels_0011 (
    generation_id  VARCHAR NOT NULL,
    reviewer       VARCHAR NOT NULL,
    label          VARCHAR NOT NULL CHECK (label IN ('correct', 'missed_risk', 'false_positive', 'incorrect')),
    comment        VARCHAR,
    labeled_at     TIMESTAMPTZ NOT NULL,
    source_file    VARCHAR NOT NULL,
    source_line    BIGINT,
    ingested_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    source_sha256  VARCHAR
);
INSERT INTO feedback_labels_0011
SELECT generation_id, reviewer, label, comment, labeled_at, source_file, source_line, ingested_at, source_sha256
FROM feedback_labels;
DROP TABLE feedback_labels;
ALTER TABLE feedback_labels_0011 RENAME TO feedback_labels;
CREATE OR REPLACE VIEW label_summary AS
SELECT g.model,
       g.prompt_name,
       g.prompt_version,
       date_trunc('week', l.labeled_at AT TIME ZONE 'UTC') AS week,
       count(*)                                             AS labels,
       count(*) FILTER (WHERE l.label = 'correct')          AS correct,
       count(*) FILTER (WHERE l.label = 'missed_risk')      AS missed_risk,
       count(*) FILTER (WHERE l.label = 'false_positive')   AS false_positive,
       avg(CASE WHEN l.label = 'correct' THEN 1.0 ELSE 0.0 END) AS correct_rate,
       count(*) FILTER (WHERE l.label = 'incorrect')        AS incorrect
FROM feedback_labels l
JOIN generations g USING (generation_id)
GROUP BY ALL;
