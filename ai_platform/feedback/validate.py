"""Set-based validation of staged label rows, and the writes, in one warehouse transaction.

Every staged row ends in exactly one of: feedback_labels (accepted),
feedback_quarantine (with its reason), or counted as a duplicate of a label
already stored (same generation_id, reviewer, labeled_at, label and comment).
The same key with a different label or comment is a conflict, quarantined: a
reviewer who changes their mind writes a new labeled_at.

All of it is set-based over the whole file at once (no per-row Python): the row
checks ran with the parse (checks.py); here unknown ids are an anti-join with
`generations`, and duplicates are found by the key's hash, within the file and
against what is stored, before the few rows involved are compared in full.

The anti-joins are written `x NOT IN (SELECT ... WHERE ... IS NOT NULL)`, never
`NOT EXISTS (correlated subquery)`: duckdb 1.5.5 plans the latter as a
LEFT_DELIM_JOIN (a GROUP BY of the outer side's distinct keys, an inner join, then
an IS NOT DISTINCT FROM anti-join), 2-3x the time of the plain mark join NOT IN
gets. The subqueries' keys are never NULL (a NULL would make NOT IN unknown).
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import numpy as np
import pyarrow as pa

from ai_platform.feedback.checks import CONFLICT, UNKNOWN_FOR_NOW
from ai_platform.feedback.readers import Staging

# The check that needs the warehouse: is the generation known? The rows keep their values,
# for feedback_pending: they are few, and the staging is not scanned again for them.
UNKNOWN = """
CREATE OR REPLACE TEMP TABLE fb_unknown AS
SELECT line, generation_id, reviewer, label, comment, labeled_at FROM fb_stage
WHERE reason IS NULL
  AND generation_id NOT IN (SELECT generation_id FROM generations WHERE generation_id IS NOT NULL)
"""

# Duplicates and conflicts involve few rows, so they are found by the key's hash (`k`) and
# only those rows are compared in full: the good rows are read out of Arrow once, by INSERT.
# A good row with an unknown generation is quarantined as such, never compared.
#
# Keys more than one good row of this file has (Staging.repeated_keys) give fb_suspects.
# Later copies of the first are duplicates; others conflict.
REPEATS = """
CREATE OR REPLACE TEMP TABLE fb_repeats AS
WITH suspects AS (
    SELECT line, generation_id, reviewer, labeled_at, label, comment
    FROM fb_suspects
    WHERE reason IS NULL AND line NOT IN (SELECT line FROM fb_unknown)
), ranked AS (
    SELECT line, label, comment,
           first_value(line) OVER w AS first_line,
           first_value(label) OVER w AS first_label,
           first_value(comment) OVER w AS first_comment
    FROM suspects
    WINDOW w AS (PARTITION BY generation_id, reviewer, labeled_at ORDER BY line
                 ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)
)
SELECT line,
       CASE WHEN label = first_label AND comment IS NOT DISTINCT FROM first_comment
            THEN 'duplicate' ELSE 'conflict' END AS outcome
FROM ranked WHERE line <> first_line
"""

# Stored labels (from earlier files) whose key hash a good row of this file has: one scan of
# the stored keys; their hashes give fb_matches, the rows of this file to compare with them.
# hash() is DuckDB's, computed on both sides by this process and never stored.
STORED_ROWS = """
CREATE OR REPLACE TEMP TABLE fb_stored_rows AS
SELECT generation_id, reviewer, labeled_at, label, comment, hash(generation_id, reviewer, labeled_at) AS k
FROM feedback_labels
WHERE hash(generation_id, reviewer, labeled_at) IN (SELECT k FROM fb_stage WHERE reason IS NULL)
"""
# The same key stored: the same label and comment make a duplicate, anything else a conflict.
STORED = """
CREATE OR REPLACE TEMP TABLE fb_stored AS
SELECT c.line,
       CASE WHEN bool_or(s.label = c.label AND s.comment IS NOT DISTINCT FROM c.comment)
            THEN 'duplicate' ELSE 'conflict' END AS outcome
FROM fb_matches c
JOIN fb_stored_rows s
  ON s.generation_id = c.generation_id AND s.reviewer = c.reviewer AND s.labeled_at = c.labeled_at
WHERE c.reason IS NULL AND c.line NOT IN (SELECT line FROM fb_unknown)
GROUP BY c.line
"""

# A stored label decides over the first copy in this file.
OUTCOMES = """
CREATE OR REPLACE TEMP TABLE fb_outcomes AS
SELECT line, outcome FROM fb_stored
UNION ALL
SELECT line, outcome FROM fb_repeats WHERE line NOT IN (SELECT line FROM fb_stored)
"""

INSERT = """
INSERT INTO feedback_labels
    (generation_id, reviewer, label, comment, labeled_at, source_file, source_line, source_sha256)
SELECT generation_id, reviewer, label, comment, labeled_at, $file, line, $sha
FROM fb_stage
WHERE reason IS NULL AND line NOT IN (SELECT line FROM fb_unknown UNION ALL SELECT line FROM fb_outcomes)
"""

# Everything quarantined, in one scan: bad rows, unknown generations, conflicts.
BAD = f"""
CREATE OR REPLACE TEMP TABLE fb_bad AS
SELECT s.line, s.raw,
       CASE WHEN s.reason IS NOT NULL THEN s.reason
            WHEN u.line IS NOT NULL THEN '{UNKNOWN_FOR_NOW}'
            ELSE '{CONFLICT}' END AS reason
FROM fb_stage s
LEFT JOIN fb_unknown u USING (line)
LEFT JOIN (SELECT line FROM fb_outcomes WHERE outcome = 'conflict') c USING (line)
WHERE s.reason IS NOT NULL OR u.line IS NOT NULL OR c.line IS NOT NULL
"""

# A good row whose generation is not logged yet waits, parsed, for the next ingests (pending.py).
# From fb_unknown itself: a join with the staging read all of its 1M rows' text again (a
# min/max filter on line, pushed into the Arrow scan, keeps nearly all of them).
PENDING = """
INSERT INTO feedback_pending
    (generation_id, reviewer, label, comment, labeled_at, source_file, source_sha256, source_line)
SELECT generation_id, reviewer, label, comment, labeled_at, $file, $sha, line
FROM fb_unknown
"""

QUARANTINE = """
INSERT INTO feedback_quarantine (source_file, source_sha256, source_line, reason, raw)
SELECT $file, $sha, b.line, b.reason, coalesce(b.raw, r.raw)
FROM fb_bad b LEFT JOIN fb_raw r USING (line)
"""


@dataclass(frozen=True)
class Counts:
    rows_in: int
    accepted: int
    quarantined: int
    duplicates: int
    reasons: dict[str, int]


def write(con: duckdb.DuckDBPyConnection, staging: Staging, source_file: str, sha256: str) -> Counts:
    """Validate the staged rows and write them; `con` is inside the file's one transaction."""
    con.register("fb_stage", staging.table)  # temp tables and views go with the connection
    con.execute(UNKNOWN)
    con.register("fb_suspects", staging.rows_with_keys(staging.repeated_keys()))
    con.execute(REPEATS)
    con.execute(STORED_ROWS)
    stored_keys = con.execute("SELECT DISTINCT k FROM fb_stored_rows").fetchnumpy()["k"]
    con.register("fb_matches", staging.rows_with_keys(np.asarray(stored_keys, dtype=np.uint64)))
    con.execute(STORED)
    con.execute(OUTCOMES)
    outcomes = dict(con.execute("SELECT outcome, count(*) FROM fb_outcomes GROUP BY outcome").fetchall())
    duplicates = outcomes.get("duplicate", 0)
    params = {"file": source_file, "sha": sha256}
    (accepted,) = con.execute(INSERT, params).fetchone() or (0,)

    con.execute(BAD)
    (rows_in,) = con.execute("SELECT count(*) FROM fb_stage").fetchone() or (0,)
    (invalid,) = con.execute("SELECT count(*) FROM fb_bad").fetchone() or (0,)
    lines = con.execute("SELECT line FROM fb_bad WHERE raw IS NULL ORDER BY line").fetchnumpy()["line"]
    lines = np.asarray(lines, dtype=np.int64)
    raw = pa.table({"line": pa.array(lines, pa.int64()), "raw": pa.array(staging.raw_of(lines), pa.string())})
    con.register("fb_raw", raw)
    (quarantined,) = con.execute(QUARANTINE, params).fetchone() or (0,)
    con.execute(PENDING, params)
    reasons = dict(con.execute("SELECT reason, count(*) FROM fb_bad GROUP BY reason ORDER BY 2 DESC, 1").fetchall())

    # Conservation, from independent counts: what the inserts reported against what was read.
    if quarantined != invalid:
        raise AssertionError(f"quarantined {quarantined} rows of {invalid} bad ones")
    if rows_in != accepted + quarantined + duplicates:
        raise AssertionError(f"rows in {rows_in} != {accepted} accepted + {quarantined} quarantined + {duplicates} dup")
    return Counts(rows_in, accepted, quarantined, duplicates, reasons)
