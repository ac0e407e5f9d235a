-- Why a deployment row exists or ended: "canary gates failed: ...", "rollback to ...",
-- "prompt bundle reloaded"; a failing canary leaves the incumbent live and says why here.
ALTER TABLE deployments ADD COLUMN reason VARCHAR;
ALTER TABLE deployments ADD COLUMN endpoint VARCHAR;
