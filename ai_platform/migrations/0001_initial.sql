-- The warehouse schema (docs/architecture.md, "The warehouse"). Digests are lowercase hex sha256 ("sha256:" prefixed
-- where the OCI convention wants it). Times are UTC.

CREATE TABLE weight_files (
    manifest_digest VARCHAR NOT NULL,   -- digest of the verified_weights manifest
    model           VARCHAR NOT NULL,
    source_commit   VARCHAR,            -- hub commit, or platform-repo commit for local sources
    path            VARCHAR NOT NULL,
    size_bytes      BIGINT  NOT NULL,
    sha256          VARCHAR NOT NULL,
    lfs_sha256      VARCHAR,            -- what the hub claims, when it says
    verified_at     TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (manifest_digest, path)
);

CREATE TABLE tensor_hashes (
    manifest_digest VARCHAR NOT NULL,
    path            VARCHAR NOT NULL,
    tensor          VARCHAR NOT NULL,
    dtype           VARCHAR NOT NULL,
    shape           BIGINT[] NOT NULL,
    data_begin      BIGINT  NOT NULL,
    data_end        BIGINT  NOT NULL,
    sha256          VARCHAR NOT NULL,
    PRIMARY KEY (manifest_digest, path, tensor)
);

CREATE TABLE quantizations (
    digest            VARCHAR PRIMARY KEY,  -- manifest digest of the quantized weights
    model             VARCHAR NOT NULL,
    input_digest      VARCHAR NOT NULL,     -- verified_weights manifest digest
    method            VARCHAR NOT NULL,
    recipe            JSON,
    recipe_digest     VARCHAR,
    ppl_base          DOUBLE,
    ppl_quantized     DOUBLE,
    ppl_increase      DOUBLE,
    duration_s        DOUBLE,
    peak_memory_bytes BIGINT,
    created_at        TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE prompt_versions (
    version        VARCHAR PRIMARY KEY,  -- sha256 of the canonical compiled JSON
    name           VARCHAR NOT NULL,
    source_path    VARCHAR NOT NULL,
    source_sha256  VARCHAR NOT NULL,
    repo_commit    VARCHAR,
    compiled       JSON NOT NULL,
    created_at     TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE images (
    digest          VARCHAR PRIMARY KEY,  -- manifest digest, the model's fingerprint
    model           VARCHAR NOT NULL,
    ref             VARCHAR,
    weights_digest  VARCHAR NOT NULL,
    size_bytes      BIGINT,
    annotations     JSON,
    created_at      TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE eval_runs (
    run_id         VARCHAR PRIMARY KEY,
    model          VARCHAR NOT NULL,
    role           VARCHAR NOT NULL CHECK (role IN ('champion', 'challenger')),
    image_digest   VARCHAR,
    bundle_digest  VARCHAR,
    eval_set       VARCHAR,
    metrics        JSON,
    passed         BOOLEAN,
    started_at     TIMESTAMPTZ NOT NULL,
    finished_at    TIMESTAMPTZ
);

CREATE TABLE eval_cases (
    run_id         VARCHAR NOT NULL,
    case_id        VARCHAR NOT NULL,
    prompt_version VARCHAR,
    input          JSON,
    output         VARCHAR,
    schema_valid   BOOLEAN,
    finish_reason  VARCHAR,
    latency_s      DOUBLE,
    metrics        JSON,
    PRIMARY KEY (run_id, case_id)
);

CREATE TABLE deployments (
    deployment_id  VARCHAR PRIMARY KEY,
    model          VARCHAR NOT NULL,
    target         VARCHAR NOT NULL CHECK (target IN ('embedded', 'kubernetes')),
    color          VARCHAR NOT NULL CHECK (color IN ('blue', 'green')),
    image_digest   VARCHAR NOT NULL,
    bundle_digest  VARCHAR,
    status         VARCHAR NOT NULL,
    started_at     TIMESTAMPTZ NOT NULL DEFAULT now(),
    ended_at       TIMESTAMPTZ
);

CREATE TABLE generations (
    generation_id  VARCHAR PRIMARY KEY,
    model          VARCHAR NOT NULL,
    prompt_name    VARCHAR NOT NULL,
    prompt_version VARCHAR NOT NULL,
    image_digest   VARCHAR,
    source         VARCHAR NOT NULL DEFAULT 'gateway',  -- gateway | canary
    input          JSON,
    output         VARCHAR,
    metrics        JSON,
    finish_reason  VARCHAR,
    latency_s      DOUBLE,
    trust_score    DOUBLE,
    needs_review   BOOLEAN,
    created_at     TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE feedback_labels (
    generation_id  VARCHAR NOT NULL,
    reviewer       VARCHAR NOT NULL,
    label          VARCHAR NOT NULL CHECK (label IN ('correct', 'missed_risk', 'false_positive')),
    comment        VARCHAR,
    labeled_at     TIMESTAMPTZ NOT NULL,
    source_file    VARCHAR NOT NULL,
    source_line    BIGINT,
    ingested_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (generation_id, reviewer, labeled_at)
);

CREATE TABLE feedback_quarantine (
    source_file    VARCHAR NOT NULL,
    source_sha256  VARCHAR NOT NULL,
    source_line    BIGINT  NOT NULL,
    reason         VARCHAR NOT NULL,
    raw            VARCHAR,
    ingested_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (source_sha256, source_line)
);

CREATE TABLE trust_models (
    version        VARCHAR PRIMARY KEY,  -- sha256 of the saved model
    algorithm      VARCHAR NOT NULL,
    features       JSON NOT NULL,
    metrics        JSON NOT NULL,
    champion       BOOLEAN NOT NULL DEFAULT false,
    artifact_path  VARCHAR NOT NULL,
    trained_at     TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- Analysts' views. Week buckets are ISO weeks in UTC.
CREATE VIEW label_summary AS
SELECT g.model,
       g.prompt_name,
       g.prompt_version,
       date_trunc('week', l.labeled_at AT TIME ZONE 'UTC') AS week,
       count(*)                                             AS labels,
       count(*) FILTER (WHERE l.label = 'correct')          AS correct,
       count(*) FILTER (WHERE l.label = 'missed_risk')      AS missed_risk,
       count(*) FILTER (WHERE l.label = 'false_positive')   AS false_positive,
       avg(CASE WHEN l.label = 'correct' THEN 1.0 ELSE 0.0 END) AS correct_rate
FROM feedback_labels l
JOIN generations g USING (generation_id)
GROUP BY ALL;

CREATE VIEW generation_quality AS
SELECT g.generation_id,
       g.model,
       g.prompt_name,
       g.prompt_version,
       g.image_digest,
       g.source,
       g.created_at,
       g.latency_s,
       g.finish_reason,
       g.trust_score,
       g.needs_review,
       l.reviewer,
       l.label,
       l.labeled_at
FROM generations g
LEFT JOIN feedback_labels l USING (generation_id);
