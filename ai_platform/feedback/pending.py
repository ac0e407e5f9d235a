"""Labels that arrived before their generation: looked at again on every ingest.

A gateway replica may take a reviewer's label for a generation that another
replica has answered but not yet written. Such a label is quarantined "for now"
(`UNKNOWN_FOR_NOW`) and kept parsed in `feedback_pending`. Every ingest first runs
`retry`, in one transaction:

- a pending label whose generation is now logged leaves the quarantine: it is
  accepted, or a duplicate of the same label stored since, or, where a stored
  label with the same key says otherwise, quarantined as a conflict;
- one still unknown `PENDING_HOURS` after it arrived is quarantined for good
  (`UNKNOWN_GENERATION`).

The file's counts in `feedback_files` move with its rows, so rows in = accepted +
quarantined + duplicates holds for every file at all times.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb

from ai_platform.feedback.checks import CONFLICT, PENDING_HOURS, UNKNOWN_GENERATION
from ai_platform.warehouse import Warehouse

# Pending labels can share a key (the same row in two files, or a reviewer's two answers, both
# early): without a stored label, the first to arrive is accepted and the others are compared
# with it, as rows of one file are (validate.REPEATS).
READY = f"""
CREATE OR REPLACE TEMP TABLE fb_ready AS
WITH known AS (
    SELECT p.*,
           row_number() OVER w AS nth,
           first_value(p.label) OVER w AS first_label,
           first_value(p.comment) OVER w AS first_comment
    FROM feedback_pending p
    WHERE EXISTS (SELECT 1 FROM generations g WHERE g.generation_id = p.generation_id)
    WINDOW w AS (PARTITION BY p.generation_id, p.reviewer, p.labeled_at
                 ORDER BY p.first_seen_at, p.source_sha256, p.source_line
                 ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)
)
SELECT p.* EXCLUDE (nth, first_label, first_comment),
       CASE WHEN NOT EXISTS (SELECT 1 FROM feedback_labels s WHERE s.generation_id = p.generation_id
                             AND s.reviewer = p.reviewer AND s.labeled_at = p.labeled_at)
            THEN CASE WHEN p.nth = 1 THEN 'accepted'
                      WHEN p.label = p.first_label AND p.comment IS NOT DISTINCT FROM p.first_comment THEN 'duplicate'
                      ELSE 'conflict' END
            WHEN EXISTS (SELECT 1 FROM feedback_labels s WHERE s.generation_id = p.generation_id
                         AND s.reviewer = p.reviewer AND s.labeled_at = p.labeled_at
                         AND s.label = p.label AND s.comment IS NOT DISTINCT FROM p.comment) THEN 'duplicate'
            ELSE 'conflict' END AS outcome
FROM known p
UNION ALL
SELECT p.*, 'expired' AS outcome
FROM feedback_pending p
WHERE p.first_seen_at < now() - INTERVAL {PENDING_HOURS} HOURS
  AND NOT EXISTS (SELECT 1 FROM generations g WHERE g.generation_id = p.generation_id)
"""

ACCEPT = """
INSERT INTO feedback_labels
    (generation_id, reviewer, label, comment, labeled_at, source_file, source_line, source_sha256)
SELECT generation_id, reviewer, label, comment, labeled_at, source_file, source_line, source_sha256
FROM fb_ready WHERE outcome = 'accepted'
"""

LEAVE_QUARANTINE = """
DELETE FROM feedback_quarantine q
WHERE EXISTS (SELECT 1 FROM fb_ready r WHERE r.outcome IN ('accepted', 'duplicate')
              AND r.source_sha256 = q.source_sha256 AND r.source_line = q.source_line)
"""

REASON = """
UPDATE feedback_quarantine q SET reason = $reason
WHERE EXISTS (SELECT 1 FROM fb_ready r WHERE r.outcome = $outcome
              AND r.source_sha256 = q.source_sha256 AND r.source_line = q.source_line)
"""

COUNTS = """
UPDATE feedback_files f
SET accepted = f.accepted + m.accepted, duplicates = f.duplicates + m.duplicates,
    quarantined = f.quarantined - m.accepted - m.duplicates
FROM (SELECT source_sha256,
             count(*) FILTER (WHERE outcome = 'accepted') AS accepted,
             count(*) FILTER (WHERE outcome = 'duplicate') AS duplicates
      FROM fb_ready GROUP BY source_sha256) m
WHERE f.sha256 = m.source_sha256
"""

DONE = """
DELETE FROM feedback_pending p
WHERE EXISTS (SELECT 1 FROM fb_ready r WHERE r.source_sha256 = p.source_sha256 AND r.source_line = p.source_line)
"""


@dataclass(frozen=True)
class Retried:
    accepted: int
    duplicates: int
    conflicts: int
    expired: int  # quarantined for good: still unknown after the window
    waiting: int  # still pending

    def summary(self) -> str:
        return (
            f"labels waiting for their generation: {self.accepted} accepted, {self.duplicates} duplicates,"
            f" {self.conflicts} conflicts, {self.expired} unknown after {PENDING_HOURS} h, {self.waiting} still waiting"
        )


def retry(warehouse: Warehouse) -> Retried:
    """Look again at every pending label (one transaction)."""
    with warehouse.write() as con:
        return retry_in(con)


def retry_in(con: duckdb.DuckDBPyConnection) -> Retried:
    con.execute(READY)
    outcomes = dict(con.execute("SELECT outcome, count(*) FROM fb_ready GROUP BY outcome").fetchall())
    if outcomes:
        con.execute(ACCEPT)
        con.execute(LEAVE_QUARANTINE)
        con.execute(REASON, {"reason": CONFLICT, "outcome": "conflict"})
        con.execute(REASON, {"reason": UNKNOWN_GENERATION, "outcome": "expired"})
        con.execute(COUNTS)
        con.execute(DONE)
    (waiting,) = con.execute("SELECT count(*) FROM feedback_pending").fetchone() or (0,)
    con.execute("DROP TABLE IF EXISTS temp.fb_ready")
    return Retried(
        outcomes.get("accepted", 0),
        outcomes.get("duplicate", 0),
        outcomes.get("conflict", 0),
        outcomes.get("expired", 0),
        waiting,
    )
