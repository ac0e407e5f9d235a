"""What makes a staged row a good label: one SQL projection, the same for every format.

`row_checks(source)` turns rows of (line, generation_id, reviewer, label, comment,
labeled_at, problem, raw), all text, into cleaned values, a parsed labeled_at,
the key as one hash, and the first reason the row is bad (NULL when it is good).
It runs where the rows are parsed, so for DuckDB's CSV reader it streams with
the parse; only the check that needs the warehouse (unknown generation ids)
runs later, in validate.py.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import duckdb

from ai_platform.feedback.formats import FIELDS, LABELS

# Reasons are fixed strings so analysts can GROUP BY them; the raw text shows the value.
WRONG_WIDTH = "wrong number of fields"
BAD_QUOTING = "malformed CSV quoting"
FIELD_TOO_LONG = "field longer than 131072 characters"  # Python's csv limit (the exact reader only)
NOT_JSON = "not valid JSON"
TOO_DEEP = "JSON nested too deeply to read"  # deeper than Python's recursion limit: never a label row
NOT_OBJECT = "not a JSON object"
UNKNOWN_FIELD = "unknown field"
NOT_TEXT = "field is not a string"
MISSING = "missing {}"
UNKNOWN_LABEL = "unknown label"
NO_ZONE = "labeled_at has no time zone"
NOT_ISO = "labeled_at is not an ISO 8601 timestamp"
FUTURE = "labeled_at is in the future"
UNKNOWN_GENERATION = "unknown generation_id"  # still unknown after the retry window (feedback/pending.py)
PENDING_HOURS = 24
UNKNOWN_FOR_NOW = f"generation_id not logged yet (retried at every ingest for {PENDING_HOURS} h)"
CONFLICT = "conflicts with an earlier label (same generation_id, reviewer, labeled_at)"

# ISO 8601 / RFC 3339 date-time: T or space, minutes required, seconds and fraction optional,
# and a zone: Z or an offset. Upper-cased first, so t and z pass too. DuckDB alone would
# read a naive time as UTC and a bare date as midnight: both are refused instead.
_TIME = r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?"
ZONED = _TIME + r"(Z|[+-]([01]\d|2[0-3])(:?[0-5]\d)?)"  # an offset under a day (DuckDB reads +99:00 as 99 h)
NAIVE = _TIME
# A time given to the minute gets ":00": DuckDB 1.5 casts 10:04:00Z but not 10:04Z.
MINUTES = r"^(\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2})([Z+-])"
# The shape most tools write (2026-01-06T10:00:00Z), one case of ZONED: GLOB matches it in
# two thirds of the regex's time, and the regex sees only the rest.
COMMON = "[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9]Z"


def _trimmed(column: str) -> str:
    """Without surrounding spaces (spreadsheets pad values); trim() only where needed, it is the slow part."""
    return f"nullif(CASE WHEN {column} LIKE ' %' OR {column} LIKE '% ' THEN trim({column}) ELSE {column} END, '')"


def row_checks(source: str) -> str:
    """A SELECT over `source` (a table name or a parenthesized query) giving the checked rows."""
    labels = ", ".join(f"'{label}'" for label in LABELS)
    return f"""
WITH trimmed AS (
    SELECT line, problem, raw,
           {_trimmed("generation_id")} AS generation_id,
           {_trimmed("reviewer")} AS reviewer,
           {_trimmed("label")} AS label,
           -- kept as written unless blank (trim() also drops U+00A0, U+3000 and the other
           -- Unicode spaces); a comment that starts with visible ASCII is not blank
           CASE WHEN ascii(comment) BETWEEN 33 AND 126 THEN comment
                WHEN trim(comment) <> '' THEN comment END AS comment,
           {_trimmed("labeled_at")} AS stamp
    FROM {source}
), cleaned AS (
    -- lower() and upper() copy every string: only where a label is not already one, and
    -- where a time has a t or z (the only letters a timestamp may have)
    SELECT line, problem, raw, generation_id, reviewer, comment,
           CASE WHEN label IN ({labels}) THEN label ELSE lower(label) END AS label,
           CASE WHEN contains(stamp, 't') OR contains(stamp, 'z') THEN upper(stamp) ELSE stamp END AS stamp
    FROM trimmed
), parsed AS (
    SELECT *,
           CASE WHEN stamp GLOB '{COMMON}' THEN true ELSE regexp_full_match(stamp, '{ZONED}') END AS zoned,
           CASE WHEN zoned THEN try_cast(
               CASE WHEN stamp GLOB '{COMMON}' THEN stamp ELSE regexp_replace(stamp, '{MINUTES}', '\\1:00\\2') END
               AS TIMESTAMPTZ) END AS labeled_at
    FROM cleaned
)
SELECT line, generation_id, reviewer, label, comment, labeled_at,
       hash(generation_id, reviewer, labeled_at) AS k,  -- the key, as one number to group by
       CASE
           WHEN problem IS NOT NULL THEN problem
           WHEN generation_id IS NULL THEN '{MISSING.format("generation_id")}'
           WHEN reviewer IS NULL THEN '{MISSING.format("reviewer")}'
           WHEN label IS NULL THEN '{MISSING.format("label")}'
           WHEN label NOT IN ({labels}) THEN '{UNKNOWN_LABEL}'
           WHEN stamp IS NULL THEN '{MISSING.format("labeled_at")}'
           WHEN NOT zoned AND regexp_full_match(stamp, '{NAIVE}') THEN '{NO_ZONE}'
           WHEN labeled_at IS NULL THEN '{NOT_ISO}'
           WHEN labeled_at > now() + INTERVAL 1 DAY THEN '{FUTURE}'
       END AS reason,
       raw
FROM parsed
"""


def check_label(label: Any, latest: datetime | None = None) -> tuple[str | None, bool]:
    """The reason one label (a `POST /v1/feedback` body) would be quarantined, by the same checks as a file's
    rows (None when it is good), and whether its labeled_at is later than `latest`. Only the warehouse check
    (unknown generation ids) waits for ingestion. labeled_at is compared as these checks parsed it, in DuckDB:
    a time Python's datetime cannot hold (year 0, year 10000 after its offset) is never parsed again."""
    if not isinstance(label, dict):
        return NOT_OBJECT, False
    if set(label) - set(FIELDS):
        return f"{UNKNOWN_FIELD}: {', '.join(sorted(set(label) - set(FIELDS)))}", False
    values = [label.get(field) for field in FIELDS]
    if any(value is not None and not isinstance(value, str) for value in values):
        return NOT_TEXT, False
    columns = ", ".join(f"?::VARCHAR AS {field}" for field in FIELDS)
    source = f"(SELECT 1 AS line, {columns}, NULL::VARCHAR AS problem, NULL::VARCHAR AS raw)"
    with duckdb.connect() as con:
        query = f"SELECT reason, coalesce(labeled_at > ?::TIMESTAMPTZ, false) FROM ({row_checks(source)})"
        row = con.execute(query, [latest, *values]).fetchone()
    return (row[0], bool(row[1])) if row else (None, False)
