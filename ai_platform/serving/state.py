"""The rollout state of each model (`records.ModelState`): the live release, the previous one, gateway settings.

On the embedded backend, one small JSON file per model under `<home>/rollout/`,
replaced atomically; it is what the gateway routes by (it re-reads it on
`POST /admin/reload` and every second), so a switch is one rename. A cluster's
rollouts keep the same record in the artifact store (`read_from`), which the
cluster's gateway replicas follow and any machine can read.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ai_platform.artifacts import ArtifactStore, atomic_write
from ai_platform.config import ModelSpec, Platform
from ai_platform.records import LiveRelease
from ai_platform.records import ModelState as ModelState  # the record, under the name the gateway imports

COLORS = ("blue", "green")
GATEWAY_URL_FILE = "gateway.url"  # written by `ai-platform serve` under <home>/rollout
ADMIN_KEY_FILE = "gateway.admin-key"  # the gateway's local admin key (owner-only), beside it


Color = LiveRelease  # the gateway's name for what a model serves: one colour's release


def state_dir(home: Path) -> Path:
    return Path(home) / "rollout"


def gateway_url(home: Path) -> str | None:
    """The running gateway's address, as `ai-platform serve` left it (None: none is running)."""
    path = state_dir(home) / GATEWAY_URL_FILE
    return path.read_text().strip() if path.is_file() else None


def admin_headers(home: Path) -> dict[str, str]:
    """The running gateway's local admin key, as an Authorization header (none if no gateway wrote one)."""
    path = state_dir(home) / ADMIN_KEY_FILE
    return {"Authorization": f"Bearer {path.read_text().strip()}"} if path.is_file() else {}


def idle_color(home: Path, model: str) -> str:
    """The color a new rollout of `model` would start."""
    return load(home, model).idle_color


def load(home: Path, model: str, warehouse: str = "") -> ModelState:
    path = state_dir(home) / f"{model}.json"
    if not path.is_file():
        return ModelState(model, warehouse)
    return ModelState.from_json(json.loads(path.read_text(encoding="utf-8")))


def read_all(home: Path) -> tuple[dict[str, ModelState], dict[str, str]]:
    """Every model's rollout state under `home`, and, for each model whose state cannot be read (not JSON, or
    not a state this platform knows), why: one broken file does not hide the others."""
    found: dict[str, ModelState] = {}
    broken: dict[str, str] = {}
    for path in sorted(state_dir(home).glob("*.json")):
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            broken[path.stem] = f"{path.name}: {type(exc).__name__}: {exc}"
            continue
        _read(path.stem, raw, found, broken)
    return found, broken


def settings(platform: Platform, spec: ModelSpec, *, local: bool = True) -> dict[str, Any]:
    """What a rollout tells the gateway besides the live colour: platform.yaml's and the spec's gateway settings.
    `local`: paths of this machine (inbox, retrieval corpus, key file); a cluster's gateway has none of them
    (its key file is mounted at its home's default place; labels and the re-ask corpus are not wired there)."""
    feedback = platform.config.feedback
    corpus = feedback.retrieval_corpus
    return {
        "warehouse": platform.warehouse().location,
        "trust_threshold": feedback.trust_threshold,
        "inbox": str(platform.inbox_path) if local else "",
        "retrieval_corpus": str(platform.file(corpus)) if corpus and local else "",
        "guards": spec.guards.model_dump(mode="json"),
        "keys_file": str(platform.gateway_keys_path) if local else "",
        "window_storage": platform.config.gateway.window_storage,
        "admission": spec.serving.admission.model_dump(mode="json"),
    }


GATEWAY_STATE = ModelState.stage  # the artifact-store stage under which a cluster's rollouts keep ModelStates


def read_from(store: ArtifactStore) -> tuple[dict[str, ModelState], dict[str, str]]:
    """The rollout states a cluster's rollouts keep in the artifact store (every gateway replica reads them), and
    why any model's cannot be read (`read_all`)."""
    found: dict[str, ModelState] = {}
    broken: dict[str, str] = {}
    for model, raw in store.refs(GATEWAY_STATE).items():
        _read(model, raw, found, broken)
    return found, broken


def _read(model: str, raw: Any, found: dict[str, ModelState], broken: dict[str, str]) -> None:
    try:
        found[model] = ModelState.from_json(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        broken[model] = f"{'.'.join(str(p) for p in first['loc']) or 'state'}: {first['msg']}"


def save(home: Path, state: ModelState) -> None:
    atomic_write(state_dir(home) / f"{state.model}.json", json.dumps(state.to_json(), indent=2).encode("utf-8"))


def record_live(
    con: Any,
    *,
    deployment_id: str,
    model: str,
    target: str,
    color: str,
    image: str,
    bundle: str,
    reason: str,
    endpoint: str,
) -> None:
    """Log a new live deployment in `deployments` (inside the caller's transaction); the one it replaces retires."""
    con.execute(
        "UPDATE deployments SET status = 'retired', ended_at = now()"
        " WHERE model = ? AND target = ? AND status = 'live'",
        [model, target],
    )
    con.execute(
        "INSERT INTO deployments (deployment_id, model, target, color, image_digest, bundle_digest,"
        " status, reason, endpoint) VALUES (?, ?, ?, ?, ?, ?, 'live', ?, ?)",
        [deployment_id, model, target, color, image, bundle, reason, endpoint],
    )
