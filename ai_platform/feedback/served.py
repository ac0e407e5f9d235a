"""What the deployments served: the generations in the warehouse, summarized per model, source and image."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from ai_platform.artifacts import canonical_json, sha256_hex
from ai_platform.warehouse import Warehouse


@dataclass(frozen=True)
class ServedRow:
    model: str
    source: str
    image: str
    generations: int
    labelled: int
    unscored: int
    needs_review: int


@dataclass(frozen=True)
class Served:
    rows: list[ServedRow]
    latest: datetime | None

    @property
    def total(self) -> int:
        return sum(r.generations for r in self.rows)

    @property
    def version(self) -> str:
        """Changes when a generation is logged, labelled or scored: what the labels and trust model read."""
        figures = [[r.model, r.source, r.image, r.generations, r.labelled, r.unscored] for r in self.rows]
        return sha256_hex(canonical_json([figures, str(self.latest)]))


def served(warehouse: Warehouse) -> Served:
    _, rows = warehouse.query(
        "SELECT g.model, g.source, coalesce(g.image_digest, ''), count(*),"
        " count(*) FILTER (WHERE g.generation_id IN (SELECT generation_id FROM feedback_labels)),"
        " count(*) FILTER (WHERE g.trust_score IS NULL), count(*) FILTER (WHERE g.needs_review),"
        " max(g.created_at)"
        " FROM generations g GROUP BY ALL ORDER BY 1, 2, 3"
    )
    latest = max((r[7] for r in rows), default=None)
    return Served([ServedRow(*r[:7]) for r in rows], latest)
