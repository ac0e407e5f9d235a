-- Canary generations are immutable: a canary run writes `canary-<eval run id>-<case id>` and never
-- rewrites a row a label may name. Rows written before as `canary-<case id>` keep their ids, so every
-- label keeps the reply it was given on; each is tied here to the eval run that wrote it (its challenger
-- run, whose start is the row's created_at).
ALTER TABLE generations ADD COLUMN eval_run_id VARCHAR;
UPDATE generations SET eval_run_id = (
    SELECT max(r.run_id) FROM eval_runs r
    WHERE r.model = generations.model AND r.role = 'challenger' AND r.started_at = generations.created_at
) WHERE source = 'canary';
-- A trust model is trained on, and scores, one served model's generations. Rows from before were
-- trained on every model's labels: NULL, a champion for every model that has none of its own.
ALTER TABLE trust_models ADD COLUMN served_model VARCHAR;
