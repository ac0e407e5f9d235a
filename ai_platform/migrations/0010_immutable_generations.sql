-- Canary generations are immutable: a canary run writes `canary-<eval run id>-<case id>` and never
-- rewrites a row a label may name. Rows written before as `canary-<case id>` keep their ids, so every
-- label keeps the reply it was given on; this table ties each canary generation to the eval run that
-- wrote it (for the older rows: the challenger run whose start is the row's created_at). A table of its
-- own, not a column: DuckLake loses time travel over inlined rows of a table altered after they were
-- written (tests/test_warehouse_lake.py caught it).
CREATE TABLE canary_generations (
    generation_id  VARCHAR NOT NULL,
    eval_run_id    VARCHAR NOT NULL
);
INSERT INTO canary_generations
SELECT g.generation_id, max(r.run_id)
FROM generations g JOIN eval_runs r ON r.model = g.model AND r.role = 'challenger' AND r.started_at = g.created_at
WHERE g.source = 'canary'
GROUP BY g.generation_id;
-- A trust model is trained on, and scores, one served model's generations. Rows from before were
-- trained on every model's labels: NULL, a champion for every model that has none of its own.
ALTER TABLE trust_models ADD COLUMN served_model VARCHAR;
