"""Every route but /healthz and /metrics needs a bearer key with the right scope; keys are stored hashed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gateway_harness import client as gateway
from gateway_harness import key_file

from ai_platform.serving.gateway import keys
from ai_platform.serving.state import ModelState, admin_headers, save

ROUTES = [
    ("POST", "/v1/prompts/review:run", "invoke"),
    ("POST", "/v1/chat/completions", "invoke"),
    ("POST", "/v1/completions", "invoke"),
    ("GET", "/v1/models", "invoke"),
    ("POST", "/v1/feedback", "label"),
    ("POST", "/admin/reload", "admin"),
    ("GET", "/admin/status", "admin"),
]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    save(tmp_path, ModelState("m", str(tmp_path / "wh.duckdb"), inbox=str(tmp_path / "inbox")))
    return tmp_path


@pytest.mark.parametrize(("method", "path", "scope"), ROUTES)
def test_each_route_refuses_a_missing_a_wrong_and_an_unscoped_key(home: Path, method: str, path: str, scope: str):
    other = next(s for s in keys.SCOPES if s != scope)
    unscoped = keys.create(key_file(home), "someone", [other])
    scoped = keys.create(key_file(home), "allowed", [scope])
    with gateway(home) as client:
        missing = client.request(method, path, json={})
        wrong = client.request(method, path, json={}, headers={"Authorization": "Bearer aip-not-a-key"})
        forbidden = client.request(method, path, json={}, headers={"Authorization": f"Bearer {unscoped}"})
        allowed = client.request(method, path, json={}, headers={"Authorization": f"Bearer {scoped}"})
    assert missing.status_code == 401 and missing.headers["www-authenticate"] == "Bearer"
    assert missing.json()["error"]["type"] == "authentication_error"
    assert wrong.status_code == 401 and wrong.json()["error"]["code"] == "invalid_api_key"
    assert forbidden.status_code == 403 and forbidden.json()["error"]["type"] == "permission_error"
    assert allowed.status_code not in (401, 403)


def test_health_and_metrics_need_no_key(home: Path) -> None:
    with gateway(home) as client:
        assert client.get("/healthz").status_code == 200
        assert client.get("/metrics").status_code == 200


def test_keys_are_stored_hashed_and_a_revoked_key_stops_working(home: Path) -> None:
    raw = keys.create(key_file(home), "ana", ["invoke"])
    stored = key_file(home).read_text()
    assert raw not in stored and keys.digest(raw) in stored
    assert key_file(home).stat().st_mode & 0o077 == 0, "owner-only"
    with gateway(home, raw) as client:
        assert client.get("/v1/models").status_code == 200
        assert keys.revoke(key_file(home), "ana")
        assert client.get("/v1/models").status_code == 401, "the file is re-read when it changes"


def test_the_local_admin_key_lets_rollouts_on_this_machine_reload(home: Path) -> None:
    with gateway(home) as client:
        headers = admin_headers(home)
        assert client.post("/admin/reload", headers=headers).status_code == 200
        assert json.loads(client.get("/admin/status", headers=headers).text)["models"]["m"]["model"] == "m"


def test_platform_yaml_names_the_key_file_through_the_rollout_state(tmp_path: Path) -> None:
    elsewhere = tmp_path / "secrets" / "gateway-keys.json"
    save(tmp_path, ModelState("m", str(tmp_path / "wh.duckdb"), keys_file=str(elsewhere)))
    raw = keys.create(elsewhere, "ana", ["invoke"])
    with gateway(tmp_path, raw) as client:
        assert client.get("/v1/models").status_code == 200


def test_a_gateway_started_before_the_first_rollout_follows_the_key_file_it_names(tmp_path: Path) -> None:
    with gateway(tmp_path) as client:  # nothing rolled out yet: the default key file
        elsewhere = tmp_path / "secrets" / "gateway-keys.json"
        raw = keys.create(elsewhere, "ana", ["invoke"])
        assert client.get("/v1/models", headers={"Authorization": f"Bearer {raw}"}).status_code == 401
        save(tmp_path, ModelState("m", str(tmp_path / "wh.duckdb"), keys_file=str(elsewhere)))  # a rollout
        assert client.post("/admin/reload", headers=admin_headers(tmp_path)).status_code == 200
        assert client.get("/v1/models", headers={"Authorization": f"Bearer {raw}"}).status_code == 200


def test_the_gateways_own_settings_win_over_what_a_rollout_state_names(tmp_path: Path, redis_url: str) -> None:
    """platform.yaml's gateway section, given to the gateway (`ai-platform serve --keys --window-storage`), is the
    gateway's for every model: a rollout state naming other settings does not change them."""
    own = tmp_path / "secrets" / "gateway-keys.json"
    raw = keys.create(own, "ana", ["invoke"])
    stale = tmp_path / "old" / "keys.json"
    other = keys.create(stale, "bob", ["invoke"])
    save(tmp_path, ModelState("m", str(tmp_path / "wh.duckdb"), keys_file=str(stale), window_storage="memory://"))
    with gateway(tmp_path, raw, keys_file=own, window_storage=f"{redis_url}/3") as client:
        assert client.get("/v1/models").status_code == 200
        assert client.get("/v1/models", headers={"Authorization": f"Bearer {other}"}).status_code == 401
        assert client.post("/admin/reload", headers=admin_headers(tmp_path)).status_code == 200
        assert client.get("/v1/models").status_code == 200, "a reload keeps them"
        assert client.app.state.gateway.pipeline.windows.storage_uri == f"{redis_url}/3"  # type: ignore[attr-defined]
