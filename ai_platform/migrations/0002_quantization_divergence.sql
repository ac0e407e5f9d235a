-- Perplexity alone missed 2-bit damage on the demo model; the quality gate also
-- holds the mean KL(base || quantized) per held-out token and top-1 agreement.
ALTER TABLE quantizations ADD COLUMN kl_divergence DOUBLE;
ALTER TABLE quantizations ADD COLUMN top1_agreement DOUBLE;
ALTER TABLE quantizations ADD COLUMN recipe_ok BOOLEAN;  -- every quality gate passed
