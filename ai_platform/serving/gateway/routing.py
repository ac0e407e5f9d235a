"""What the gateway serves, and which model answers a request.

Routing reads the rollout states (one per model: files under the home, replaced
atomically by a rollout; or, in a cluster, the artifact store in the registry).
A request holds the upstream it started on, so a switch never breaks a request in
flight: the old colour drains, then the rollout stops it. Prompt bundles are
loaded by digest and cached, so a prompt-only rollout is a state change, not a
vLLM restart.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ai_platform.config import Admission, Guards
from ai_platform.errors import GatewayRefusal
from ai_platform.oci.layout import OciLayout
from ai_platform.oci.store import RegistryStore
from ai_platform.prompts import bundle
from ai_platform.serving.gateway.metrics import Metrics
from ai_platform.serving.gateway.scoring import TrustChampions
from ai_platform.serving.state import Color, ModelState, read_all, read_from
from ai_platform.trust.model import TrustModel
from ai_platform.trust.rag import KeywordRetriever

LOG = logging.getLogger("ai_platform.gateway")


@dataclass(frozen=True)
class Rules:
    """A model's admission and guard policy, validated once when its rollout state is loaded."""

    admission: Admission
    guards: Guards


def rules_of(state: ModelState) -> Rules | str:
    """The state's rules, or why they are not valid (a state written by a newer or a hand-edited rollout)."""
    try:
        admission = Admission.model_validate(state.admission)
        guards = Guards.model_validate(state.guards)
    except ValidationError as exc:
        first = exc.errors()[0]
        block = "admission" if exc.title == Admission.__name__ else "guards"
        return f"{block}.{'.'.join(str(p) for p in first['loc'])}: {first['msg']}"
    return Rules(admission, guards)


class Live:
    """Each model's rollout state, the prompt bundles its live colour serves, its trust champion and retriever."""

    def __init__(self, home: Path, metrics: Metrics, states_from: RegistryStore | None = None) -> None:
        self.home = Path(home)
        self.metrics = metrics
        self.states_from = states_from
        self.states: dict[str, ModelState] = {}
        self.bundles: dict[str, dict[str, dict[str, Any]]] = {}  # digest -> prompt name -> document
        self.trust: dict[str, TrustModel | None] = {}  # model -> champion trust model
        self.champions = TrustChampions()
        self.retrievers: dict[str, KeywordRetriever] = {}
        self.rules: dict[str, Rules | str] = {}  # model -> its rules, or why its state's rules are not valid
        self.refused: dict[str, str] = {}  # model -> why its latest rollout state was refused

    def reload(self) -> dict[str, str]:
        """Read the rollout states again; the live upstream of each model. A model's state that cannot be read, or
        whose admission or guards are not valid, is refused: the model keeps its last good state where it has one
        (else its requests get a 503 naming the field), the refusal is logged once and counted."""
        states, broken = read_from(self.states_from) if self.states_from else read_all(self.home)
        rules: dict[str, Rules | str] = {}
        for model, state in list(states.items()):
            found = rules_of(state)
            if isinstance(found, str):
                broken[model] = found
            else:
                rules[model] = found
        for model, problem in broken.items():
            kept = self.states.get(model) if isinstance(self.rules.get(model), Rules) else None
            if self.refused.get(model) != problem:
                self.metrics.states_refused.labels(model).inc()
                LOG.error(
                    "%s: its rollout state is not valid (%s); %s",
                    model,
                    problem,
                    "serving its last good one" if kept else "refusing its requests",
                )
            if kept is not None:
                states[model], rules[model] = kept, self.rules[model]
            elif model in states:
                rules[model] = problem
        self.refused = broken
        before = {m: s.live.base_url for m, s in self.states.items() if s.live}
        after = {m: s.live.base_url for m, s in states.items() if s.live}
        for state in states.values():
            if state.live and state.live.bundle not in self.bundles:
                where = state.live.bundle_layout  # a folder here; `HOST/REPO@sha256:…` in a cluster
                layout = self.states_from.fetch(where) if self.states_from else OciLayout(where)
                self.bundles[state.live.bundle] = bundle.load(layout, state.live.bundle)
        self.metrics.switched(sum(before.get(m) != url for m, url in after.items()))
        for state in states.values():
            self.trust[state.model] = self.champions.champion(state.warehouse, state.model)
            if state.retrieval_corpus and state.retrieval_corpus not in self.retrievers:
                self.retrievers[state.retrieval_corpus] = KeywordRetriever(Path(state.retrieval_corpus))
        self.rules = rules
        self.states = states
        self.metrics.track(states)
        return after

    def serving(self) -> list[tuple[str, Color]]:
        """Each model with a live colour, and that colour."""
        return [(m, s.live) for m, s in self.states.items() if s.live]

    def rules_for(self, state: ModelState) -> Rules:
        """The model's validated rules; a 503 naming the broken field when its rollout state's are not valid."""
        found = self.rules.get(state.model) or rules_of(state)
        if isinstance(found, str):
            raise GatewayRefusal(
                503,
                f"{state.model} cannot be served: its rollout state's policy is not valid ({found}); roll it out again",
            )
        return found

    def prompt(self, name: str, model: str | None) -> tuple[ModelState, dict[str, Any]]:
        """The live model serving prompt `name` (of model `model`, where named) and the prompt's document."""
        hits = [
            (s, self.bundles[s.live.bundle][name])
            for m, s in self.states.items()
            if s.live and name in self.bundles.get(s.live.bundle, {}) and model in (None, m)
        ]
        if not hits:
            raise GatewayRefusal(404, f"no live model serves prompt {name!r}")
        if len(hits) > 1:
            raise GatewayRefusal(404, f'prompt {name!r} is served by several models; name one with "model"')
        return hits[0]

    def model(self, model: Any) -> ModelState:
        """The live model an OpenAI request names (`model`; None: the one live model)."""
        serving = sorted(m for m, s in self.states.items() if s.live)
        live = [s for s in self.states.values() if s.live and model in (None, s.model)]
        if not live and model in self.refused:
            raise GatewayRefusal(
                503,
                f"{model} cannot be served: its rollout state is not valid ({self.refused[model]}); roll it out again",
            )
        if not live:
            raise GatewayRefusal(
                404,
                f"the model {model!r} is not served here (live: {', '.join(serving) or 'none'})",
                param="model",
                code="model_not_found",
            )
        if len(live) > 1:
            raise GatewayRefusal(
                400, f"several models are live; name one with 'model' ({', '.join(serving)})", param="model"
            )
        return live[0]
