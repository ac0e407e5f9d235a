-- The serving preflight (issue 16): what the target runtime could execute when a
-- quantization was chosen, and which scheme was produced for it and why. vLLM's CPU
-- build has the W4A16 GEMM only in its AVX-512 kernel libraries, so the same spec
-- yields W4A16 on one machine and its fallback (W8A8) on another.
ALTER TABLE quantizations ADD COLUMN scheme VARCHAR;            -- what was produced
ALTER TABLE quantizations ADD COLUMN requested_scheme VARCHAR;  -- what the spec asked for
ALTER TABLE quantizations ADD COLUMN scheme_reason VARCHAR;

CREATE TABLE serving_preflights (
    preflight_id       VARCHAR PRIMARY KEY,
    model              VARCHAR NOT NULL,
    stage              VARCHAR NOT NULL,   -- quantized_weights
    target             VARCHAR NOT NULL,   -- embedded | kubernetes
    device             VARCHAR,            -- cpu | gpu; NULL when the target was not probed
    vllm_version       VARCHAR,
    kernel_library     VARCHAR,            -- _C, _C_AVX512, _C_AVX2 (CPU)
    cpu_flags          VARCHAR[],
    isa_override       VARCHAR,            -- AI_PLATFORM_VLLM_CPU_ISA
    compute_capability INTEGER,            -- GPU, e.g. 90 for 9.0
    ops                JSON,               -- custom op -> present
    serves             VARCHAR[],          -- the schemes this runtime executes
    requested_scheme   VARCHAR,
    chosen_scheme      VARCHAR,
    reason             VARCHAR,
    probed_at          TIMESTAMPTZ NOT NULL DEFAULT now()
);
