-- The trust model itself (its canonical JSON, whose sha256 is `version`) travels in its row: every
-- gateway replica and pipeline pod reads the champion from the warehouse it already shares, not from
-- `artifact_path`, a file on the disk of the machine that trained it.
ALTER TABLE trust_models ADD COLUMN model VARCHAR;
