"""Walk docs/kubernetes.md the way an operator would, without a cluster (tests/test_docs_kubernetes.py checks it).

What the walk reads in the docs, by structure rather than by text:

- **platform.yaml**: the one fenced ```yaml block in the section whose heading names `platform.yaml`. It is the
  whole file: the walk's platform repo is the demo's (models/, prompts/, ...) with this block as its platform.yaml.
- **Commands**: every fenced ```sh (or bash, shell, console) block. A line ending in `\\` continues on the next one;
  `# ...` comments and a leading `$ ` prompt are dropped. Each command keeps the doc line it starts on.
- **Prerequisites**: a heading whose text starts with "Prerequisites" (any level; section 1 is the place). In the
  list under it, up to the next heading of the same or a higher level, every backticked `Kind/name` names an object
  the cluster must already have, in platform.yaml's `kubernetes.namespace`; `Kind/name -n NAMESPACE` names one in
  another namespace. Kinds as kubectl spells them: `Secret`, `ConfigMap`, `PersistentVolumeClaim` (`pvc`),
  `ServiceAccount` (`sa`), `Namespace` (`ns`), any case. Example: ``- `Secret/ai-platform-lake`: PGPASSWORD``.

Placeholders: `…` (U+2026) is what the reader fills in. The walk substitutes exactly one kind of it:
`@sha256:…` after an image whose repository a `docker build -t REPO:TAG` in the docs tags (the digest the reader's
push printed) becomes `@sha256:` + DIGEST. Anywhere else in platform.yaml or in an `ai-platform` command, a `…`, a
`<...>` or a `$(...)` is an error: nothing is guessed. In other programs' arguments (kubectl's `--from-literal`
values, `docker push …`) it stays, since those are not run; a path they reference may not be a placeholder.

How each command is checked:

- `ai-platform ...`: run as a subprocess in the walk's scratch folder, which holds the platform repo at
  `platform/` (so the docs say `--repo ./platform`), with an empty AI_PLATFORM_HOME and HOME, no KUBECONFIG and no
  AI_PLATFORM_* from the test's environment. It must exit 0. Every YAML file it writes or changes there is a
  manifest of the walk. The commands that need a cluster (CLUSTER_COMMANDS) are not run: their arguments must
  parse and the model they name must be a model of the repo.
- `kubectl create namespace|secret|configmap|serviceaccount NAME` creates that object (in `-n`); a `--from-file`
  or `--from-env-file` must exist by then. `kubectl apply -f X`: X is a file (or folder) an earlier command wrote,
  or one in the project's checkout (then it is a manifest of the walk too); its objects are created. A URL is an
  install from elsewhere: not checked. Any other kubectl verb needs a cluster and names nothing checked here.
- `docker build -f F ... CONTEXT`: F and CONTEXT exist in the checkout; its `-t` tags are images the docs build.
- `helm repo add NAME URL`; `helm upgrade --install|install RELEASE REPO/CHART -n NS -f V...`: the repo was added
  before; each V exists; for a chart with a pinned values schema (CHART_SCHEMAS), V validates against it and the
  objects the chart creates for the release are created (CHART_OBJECTS).
- Any other program is an error, so a new kind of command gets a check instead of passing unseen.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shlex
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs/kubernetes.md"
CLI = ROOT / ".venv/bin/ai-platform"
SCHEMAS = Path(__file__).parent / "schemas"
PLACEHOLDER = "…"
DIGEST = "sha256:" + "5a" * 32  # what the walk writes for `@sha256:…` of an image the docs build
NAMED_KINDS = ("Secret", "ConfigMap", "PersistentVolumeClaim", "ServiceAccount", "Namespace")
KIND_ALIASES = {
    "secret": "Secret",
    "secrets": "Secret",
    "configmap": "ConfigMap",
    "configmaps": "ConfigMap",
    "cm": "ConfigMap",
    "persistentvolumeclaim": "PersistentVolumeClaim",
    "pvc": "PersistentVolumeClaim",
    "serviceaccount": "ServiceAccount",
    "sa": "ServiceAccount",
    "namespace": "Namespace",
    "ns": "Namespace",
}
# `ai-platform` commands that act on a live cluster (or serve): checked by what they name, never run
CLUSTER_COMMANDS = {
    ("rollout", "rollback"),
    ("rollout", "stop"),
    ("rollout", "status"),
    ("rollout", "reap"),
    ("rollout", "live"),
    ("serve",),
}
CHART_SCHEMAS = {"dagster/dagster": SCHEMAS / "dagster-helm-values.schema.json"}
SHELL_OPERATORS = {"&&", "||", ";", "|", ">", ">>", "<", "&"}


# --- the doc


@dataclass(frozen=True)
class Block:
    info: str  # the fence's info string: "yaml", "sh", ...
    line: int  # the doc line of its first content line
    text: str
    section: str  # the nearest heading above it


@dataclass(frozen=True)
class Command:
    line: int
    text: str  # as the doc shows it, continuations joined
    argv: tuple[str, ...]

    def __str__(self) -> str:
        return f"docs/kubernetes.md:{self.line}: `{self.text}`"


@dataclass(frozen=True)
class Ref:
    kind: str
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.kind}/{self.name} -n {self.namespace}"


@dataclass
class Doc:
    lines: list[str]
    blocks: list[Block]
    headings: list[tuple[int, int, str]]  # (line, level, text)

    @classmethod
    def read(cls, path: Path = DOC) -> Doc:
        lines = path.read_text().splitlines()
        blocks: list[Block] = []
        headings: list[tuple[int, int, str]] = []
        fence: tuple[str, int] | None = None
        body: list[str] = []
        section = ""
        for number, line in enumerate(lines, start=1):
            if fence is None:
                opened = re.match(r"^```\s*(\S*)", line)
                if opened:
                    fence, body = (opened.group(1).lower(), number + 1), []
                    continue
                heading = re.match(r"^(#{1,6})\s+(.*?)\s*$", line)
                if heading:
                    section = heading.group(2)
                    headings.append((number, len(heading.group(1)), section))
            elif line.startswith("```"):
                blocks.append(Block(fence[0], fence[1], "\n".join(body) + "\n", section))
                fence = None
            else:
                body.append(line)
        return cls(lines, blocks, headings)

    def platform_yaml(self) -> Block:
        found = [b for b in self.blocks if b.info in ("yaml", "yml") and "platform.yaml" in b.section]
        if len(found) != 1:
            where = ", ".join(f"line {b.line}" for b in found) or "none"
            raise AssertionError(
                f"docs/kubernetes.md: one ```yaml block under a heading naming platform.yaml ({where})"
            )
        return found[0]

    def commands(self) -> list[Command]:
        found: list[Command] = []
        for block in self.blocks:
            if block.info not in ("sh", "bash", "shell", "console"):
                continue
            pending: list[str] = []
            start = block.line
            for offset, raw in enumerate(block.text.splitlines()):
                if not pending:
                    start = block.line + offset
                    raw = re.sub(r"^\s*\$ ", "", raw)
                if raw.rstrip().endswith("\\"):
                    pending.append(raw.rstrip()[:-1])
                    continue
                text = " ".join(part.strip() for part in [*pending, raw]).strip()
                pending = []
                argv = tuple(shlex.split(text, comments=True))
                if argv:
                    shown = text.split(" #")[0].strip() if "#" in text else text
                    found.append(Command(start, shown, argv))
        return found

    def prerequisites(self, namespace: str) -> dict[Ref, int]:
        """The objects a "Prerequisites" list names (see the module's docstring), with the doc line of each."""
        found: dict[Ref, int] = {}
        for index, (line, level, text) in enumerate(self.headings):
            if not text.lower().startswith("prerequisites"):
                continue
            end = next((h[0] for h in self.headings[index + 1 :] if h[1] <= level), len(self.lines) + 1)
            for number in range(line + 1, end):
                item = self.lines[number - 1]
                if not re.match(r"^\s*([-*+]|\d+\.)\s", item):
                    continue
                for kind, name, ns in re.findall(r"`([A-Za-z]+)/([a-z0-9][a-z0-9.-]*)(?:\s+-n\s+([a-z0-9-]+))?`", item):
                    found[Ref(KIND_ALIASES.get(kind.lower(), kind), ns or namespace, name)] = number
        return found


# --- names


def named_objects(obj: Any, namespace: str) -> set[Ref]:
    """Every Secret, ConfigMap, claim and ServiceAccount `obj` names: a Kubernetes object, or a Helm values or
    dagster.yaml document (the Dagster chart's `envSecrets`/`envConfigMaps`/`postgresqlSecretName`, dagster-k8s's
    `env_secrets`/`env_config_maps`/`instance_config_map`/`service_account_name`). A reference marked
    `optional: true` needs nothing."""
    found: set[Ref] = set()

    def add(kind: str, name: Any) -> None:
        if isinstance(name, str) and name:
            found.add(Ref(kind, namespace, name))

    def names(items: Any) -> Iterator[Any]:
        for item in items if isinstance(items, list) else []:
            yield item.get("name") if isinstance(item, dict) else item

    def walk(node: Any) -> None:
        if isinstance(node, list):
            for item in node:
                walk(item)
            return
        if not isinstance(node, dict):
            return
        for key, value in node.items():
            optional = isinstance(value, dict) and value.get("optional") is True
            if key in ("secretKeyRef", "secretRef") and isinstance(value, dict) and not optional:
                add("Secret", value.get("name"))
            elif key in ("configMapKeyRef", "configMapRef") and isinstance(value, dict) and not optional:
                add("ConfigMap", value.get("name"))
            elif key == "secret" and isinstance(value, dict) and not optional:  # a volume, or a projected source
                add("Secret", value.get("secretName") or value.get("name"))
            elif key == "configMap" and isinstance(value, dict) and not optional:
                add("ConfigMap", value.get("name"))
            elif key == "persistentVolumeClaim" and isinstance(value, dict):
                add("PersistentVolumeClaim", value.get("claimName"))
            elif key in ("serviceAccountName", "service_account_name"):
                add("ServiceAccount", value)
            elif key in ("imagePullSecrets", "image_pull_secrets", "envSecrets", "env_secrets"):
                for name in names(value):
                    add("Secret", name)
            elif key in ("envConfigMaps", "env_config_maps"):
                for name in names(value):
                    add("ConfigMap", name)
            elif key in ("postgresqlSecretName", "postgres_password_secret"):
                add("Secret", value)
            elif key == "instance_config_map":
                add("ConfigMap", value)
            walk(value)

    walk(obj)
    return found


def chart_objects(chart: str, release: str, namespace: str, values: dict[str, Any]) -> set[Ref]:
    """What the `dagster` chart creates for a release, named as its templates name them (tests/schemas/SOURCES.md):
    `dagster.fullname` is the release name if it contains "dagster", else `<release>-dagster`."""
    if chart != "dagster/dagster":
        return set()
    overrides = values.get("global", {}) or {}
    fullname = overrides.get("fullnameOverride") or (release if "dagster" in release else f"{release}-dagster")
    made = {
        Ref("ConfigMap", namespace, f"{fullname}-instance"),
        Ref("ConfigMap", namespace, f"{fullname}-pipeline-env"),
    }
    if (values.get("dagster-user-deployments") or {}).get("enabled", True):
        made.add(Ref("ConfigMap", namespace, f"{fullname}-workspace-yaml"))
    account = values.get("serviceAccount") or {}
    if account.get("create", True):
        name = overrides.get("serviceAccountName") or account.get("name") or fullname
        made.add(Ref("ServiceAccount", namespace, name))
    if values.get("generatePostgresqlPasswordSecret", True):
        made.add(Ref("Secret", namespace, overrides.get("postgresqlSecretName") or f"{fullname}-postgresql-secret"))
    return made


# --- the chart's values


KUBERNETES_DEFINITIONS = "https://kubernetes.io/api/_definitions.json"


@cache
def _kubernetes_definitions() -> dict[str, Any]:
    import kubernetes_validate  # type: ignore[import-untyped]

    path = Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema/v1.35.0-local-strict/_definitions.json"
    loaded: dict[str, Any] = json.loads(path.read_text())
    return loaded


def values_validator(chart: str) -> Any:
    """A validator of a values *override* for `chart` against its pinned values schema.

    Helm merges the override over the chart's own values.yaml before it validates, so the schema's `required`
    lists are dropped here (a key the override leaves out comes from the defaults; list items are therefore checked
    for known keys and types, not for completeness). `additionalProperties: false` stays: a key the schema does not
    know is an error. The schema's external `$ref`s to kubernetesjsonschema.dev (v1.18.0 `_definitions.json`) are
    resolved against kubernetes_validate's bundled Kubernetes 1.35 strict definitions (same definition names, under
    `$defs`), so e.g. an `envSecrets` item with a misspelt key fails as Kubernetes' SecretEnvSource would."""
    import jsonschema
    import referencing
    import referencing.jsonschema

    schema = json.loads(CHART_SCHEMAS[chart].read_text())

    def rewrite(node: Any) -> Any:
        if isinstance(node, dict):
            out = {k: rewrite(v) for k, v in node.items() if k != "required"}
            ref = out.get("$ref")
            if isinstance(ref, str) and ref.startswith("https://kubernetesjsonschema.dev/"):
                pointer = ref.split("#", 1)[1].replace("/definitions/", "/$defs/", 1)
                out["$ref"] = f"{KUBERNETES_DEFINITIONS}#{pointer}"
            return out
        if isinstance(node, list):
            return [rewrite(v) for v in node]
        return node

    resource = referencing.Resource.from_contents(
        _kubernetes_definitions(), default_specification=referencing.jsonschema.DRAFT202012
    )
    registry: referencing.Registry[Any] = referencing.Registry().with_resource(KUBERNETES_DEFINITIONS, resource)
    return jsonschema.Draft7Validator(rewrite(schema), registry=registry)


# --- the walk


@dataclass
class Manifest:
    body: dict[str, Any]
    path: str  # relative to the scratch folder, or to the checkout
    source: Command | None  # the command that wrote it; None for a file of the checkout

    def __str__(self) -> str:
        meta = self.body.get("metadata") or {}
        return f"{self.body.get('kind')} {meta.get('name')} ({self.path}, from {self.source or 'the checkout'})"


@dataclass(repr=False)
class Walk:
    doc: Doc
    scratch: Path
    platform: dict[str, Any]
    namespace: str
    commands: list[Command] = field(default_factory=list)
    placeholder_errors: list[str] = field(default_factory=list)
    command_errors: list[str] = field(default_factory=list)  # an ai-platform command that failed
    reference_errors: list[str] = field(default_factory=list)  # a file, repo or model a command names, missing
    unknown: list[str] = field(default_factory=list)  # a command the walk cannot check
    values_errors: list[str] = field(default_factory=list)
    manifests: list[Manifest] = field(default_factory=list)
    created: dict[Ref, list[str]] = field(default_factory=dict)  # object -> what creates it
    named: dict[Ref, list[str]] = field(default_factory=dict)  # object -> who names it
    built_images: set[str] = field(default_factory=set)

    def __repr__(self) -> str:  # what pytest prints beside a failed assertion: the list it shows says the rest
        return f"Walk({len(self.commands)} commands of docs/kubernetes.md in {self.scratch})"

    def create(self, ref: Ref, by: str) -> None:
        self.created.setdefault(ref, []).append(by)

    def name(self, refs: set[Ref], by: str) -> None:
        for ref in refs:
            self.named.setdefault(ref, []).append(by)


def _option(argv: tuple[str, ...], *names: str) -> list[str]:
    """The values of an option given as `-n X`, `--namespace X` or `--namespace=X`, in order."""
    found = []
    for index, token in enumerate(argv):
        for name in names:
            if token == name and index + 1 < len(argv):
                found.append(argv[index + 1])
            elif name.startswith("--") and token.startswith(name + "="):
                found.append(token[len(name) + 1 :])
    return found


def _positionals(argv: tuple[str, ...], valued: set[str]) -> list[str]:
    out, skip = [], False
    for token in argv:
        if skip:
            skip = False
        elif token.startswith("-"):
            skip = token in valued
        else:
            out.append(token)
    return out


def _image_repository(reference: str) -> str:
    name = reference.split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    return name[: len(name) - len(last)] + last.split(":", 1)[0]


def _substitute(text: str, where: str, built: set[str], errors: list[str]) -> str:
    """Resolve `@sha256:…` of an image the docs build; report any other placeholder in `text`."""

    def digest(match: re.Match[str]) -> str:
        image = match.group(1)
        if _image_repository(image) in built:
            return f"{image}@{DIGEST}"
        errors.append(
            f"{where}: {image}@sha256:… is pinned by a digest no step of the docs produces (no `docker build -t "
            f"{_image_repository(image)}:TAG` in the docs): the reader cannot have it at this point"
        )
        return f"{image}@{DIGEST}"

    resolved = re.sub(r"([\w./:-]+)@sha256:" + PLACEHOLDER, digest, text)
    for pattern, what in (
        (PLACEHOLDER, "a `…` placeholder"),
        (r"<[^>\s]+[^>]*>", "a <...> placeholder"),
        (r"\$\(", "a $(...)"),
    ):
        if re.search(pattern, resolved):
            errors.append(f"{where}: {what} the walk has no rule for; nothing is guessed")
            break
    return resolved


def _read_manifests(path: Path, label: str, source: Command | None) -> list[Manifest]:
    if path.suffix not in (".yaml", ".yml", ".json"):
        return []
    try:
        documents = list(yaml.safe_load_all(path.read_text()))
    except yaml.YAMLError:
        return []
    return [Manifest(d, label, source) for d in documents if isinstance(d, dict) and "kind" in d and "apiVersion" in d]


def _snapshot(folder: Path) -> dict[Path, tuple[int, int]]:
    return {
        p: (p.stat().st_mtime_ns, p.stat().st_size)
        for p in folder.rglob("*")
        if p.is_file() and ".git" not in p.parts and p.parts[len(folder.parts)] not in ("home", "user-home")
    }


def walk_docs(doc: Doc, scratch: Path, make_repo: Callable[[Path, str], None]) -> Walk:
    """Walk `doc` in `scratch` (see the module's docstring). `make_repo(path, platform_yaml)` creates the platform
    repo at `path` with that platform.yaml, committed."""
    commands = doc.commands()
    errors: list[str] = []
    built: set[str] = set()
    for command in commands:  # the images the docs build, wherever in the docs they are built
        if command.argv[:2] == ("docker", "build"):
            built |= {_image_repository(tag) for tag in _option(command.argv, "-t", "--tag")}
    block = doc.platform_yaml()
    text = _substitute(block.text, f"docs/kubernetes.md:{block.line} (platform.yaml)", built, errors)
    platform = yaml.safe_load(text) or {}
    namespace = ((platform.get("kubernetes") or {}).get("namespace")) or "ai-platform"
    scratch.mkdir(parents=True, exist_ok=True)
    scratch = scratch.resolve()
    make_repo(scratch / "platform", text)
    (scratch / "home").mkdir()
    (scratch / "user-home").mkdir()
    state = Walk(doc, scratch, platform, namespace, commands, placeholder_errors=errors, built_images=built)
    helm_repos: set[str] = set()
    for command in commands:
        program = command.argv[0]
        if program == "ai-platform":
            _ai_platform(state, command)
        elif program == "kubectl":
            _kubectl(state, command)
        elif program == "docker":
            _docker(state, command)
        elif program == "helm":
            _helm(state, command, helm_repos)
        else:
            state.unknown.append(f"{command}: `{program}` is not a program the walk checks (tests/docs_walk.py)")
    # the configuration the chart install and the run pods read, whether or not a command names it
    for path, ns in (
        ("deploy/helm/dagster-values.yaml", namespace),
        ("deploy/dagster-instance.kubernetes.yaml", None),
    ):
        body = yaml.safe_load((ROOT / path).read_text()) or {}
        launcher = ((body.get("run_launcher") or {}).get("config")) or {}
        state.name(named_objects(body, ns or launcher.get("job_namespace") or namespace), path)
    for manifest in state.manifests:
        meta = manifest.body.get("metadata") or {}
        ns = meta.get("namespace") or namespace
        if manifest.body.get("kind") not in ("Secret", "ConfigMap"):
            state.name(named_objects(manifest.body, ns), str(manifest))
        if manifest.body.get("kind") != "Namespace" and meta.get("namespace"):
            state.name({Ref("Namespace", "", meta["namespace"])}, str(manifest))
    return state


def _environment(scratch: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AI_PLATFORM_") and k != "KUBECONFIG"}
    env |= {"AI_PLATFORM_HOME": str(scratch / "home"), "HOME": str(scratch / "user-home")}
    env |= {"KUBERNETES_SERVICE_HOST": "", "KUBERNETES_SERVICE_PORT": ""}
    return env


def _ai_platform(state: Walk, command: Command) -> None:
    text = _substitute(shlex.join(command.argv), str(command), state.built_images, state.placeholder_errors)
    argv = shlex.split(text)
    if any(token in SHELL_OPERATORS for token in argv):
        state.unknown.append(f"{command}: shell operators in an ai-platform command; the walk runs one command")
        return
    words = tuple(a for a in argv[1:3] if not a.startswith("-"))
    if words[:1] in CLUSTER_COMMANDS or words[:2] in CLUSTER_COMMANDS:
        _cluster_command(state, command, argv)
        return
    before = _snapshot(state.scratch)
    try:
        done = subprocess.run(
            [str(CLI), *argv[1:]],
            cwd=state.scratch,
            env=_environment(state.scratch),
            capture_output=True,
            text=True,
            timeout=300,
        )
    except subprocess.TimeoutExpired:
        state.command_errors.append(f"{command}: did not finish in 300 s")
        return
    if done.returncode != 0:
        state.command_errors.append(f"{command}: exit {done.returncode}: {done.stderr.strip()[-800:]}")
        return
    after = _snapshot(state.scratch)
    for path in sorted(p for p in after if before.get(p) != after[p]):
        relative = str(path.relative_to(state.scratch))
        if relative.startswith("platform/"):
            continue
        written = _read_manifests(path, relative, command)
        state.manifests += written
        for manifest in written:
            if manifest.body.get("kind") in NAMED_KINDS:
                meta = manifest.body.get("metadata") or {}
                ns = "" if manifest.body["kind"] == "Namespace" else meta.get("namespace") or state.namespace
                state.create(Ref(manifest.body["kind"], ns, meta.get("name", "")), f"rendered: {manifest}")


def _cluster_command(state: Walk, command: Command, argv: list[str]) -> None:
    from ai_platform.cli import parser

    try:
        args = parser().parse_args(argv[1:])
    except SystemExit:
        state.reference_errors.append(f"{command}: `ai-platform` does not accept these arguments")
        return
    model = getattr(args, "model", None)
    if model and not (state.scratch / "platform/models" / f"{model}.yaml").is_file():
        state.reference_errors.append(f"{command}: no model {model!r} in the platform repo (models/{model}.yaml)")


def _existing(state: Walk, path: str) -> Path | None:
    for base in (state.scratch, ROOT):
        candidate = (base / path).resolve()
        if candidate.exists():
            return candidate
    return None


def _kubectl(state: Walk, command: Command) -> None:
    argv = command.argv
    namespaces = _option(argv, "-n", "--namespace")
    ns = namespaces[-1] if namespaces else "default"
    valued = {"-n", "--namespace", "--context", "--kubeconfig", "-f", "--filename", "-o", "--output", "-l", "--type"}
    words = _positionals(argv[1:], valued)
    verb = words[0] if words else ""
    if namespaces:
        state.name({Ref("Namespace", "", ns)}, str(command))
    if verb == "create" and len(words) >= 3:
        kind = KIND_ALIASES.get(words[1].lower())
        name = words[3] if kind == "Secret" and len(words) >= 4 else words[2]
        if kind is None:
            return
        state.create(Ref(kind, "" if kind == "Namespace" else ns, name), str(command))
        for source in _option(argv, "--from-file", "--from-env-file"):
            path = source.split("=", 1)[-1]
            if PLACEHOLDER in path or _existing(state, path) is None:
                state.reference_errors.append(f"{command}: {path} does not exist at this point of the walk")
    elif verb == "apply":
        if _option(argv, "-k", "--kustomize"):
            state.unknown.append(f"{command}: kustomize is not something the walk renders")
        for target in _option(argv, "-f", "--filename"):
            if re.match(r"^https?://", target):
                continue  # an install from elsewhere (a CRD bundle, an operator): not checked here
            found = None if PLACEHOLDER in target or target == "-" else _existing(state, target)
            if found is None:
                state.reference_errors.append(
                    f"{command}: {target} was neither written by a command before it nor is in the checkout"
                )
                continue
            files = sorted(found.rglob("*")) if found.is_dir() else [found]
            for file in files:
                label = (
                    str(file.relative_to(state.scratch))
                    if file.is_relative_to(state.scratch)
                    else str(file.relative_to(ROOT))
                )
                written = [m for m in state.manifests if m.path == label]
                if not written:
                    written = _read_manifests(file, label, None)
                    state.manifests += written
                for manifest in written:
                    meta = manifest.body.get("metadata") or {}
                    kind = manifest.body.get("kind", "")
                    if kind in NAMED_KINDS:
                        where = "" if kind == "Namespace" else meta.get("namespace") or ns
                        state.create(Ref(kind, where, meta.get("name", "")), str(command))


def _docker(state: Walk, command: Command) -> None:
    argv = command.argv
    if argv[1:2] != ("build",):
        return
    for dockerfile in _option(argv, "-f", "--file"):
        if not (ROOT / dockerfile).is_file():
            state.reference_errors.append(f"{command}: no Dockerfile {dockerfile} in the checkout")
    valued = {"-f", "--file", "-t", "--tag", "--build-arg", "--target", "--platform", "--secret", "--label"}
    contexts = _positionals(argv[2:], valued)
    if len(contexts) != 1 or not (ROOT / contexts[0]).is_dir():
        state.reference_errors.append(f"{command}: the build context {contexts} is not one folder of the checkout")


def _helm(state: Walk, command: Command, repos: set[str]) -> None:
    argv = command.argv
    valued = {
        "-n",
        "--namespace",
        "-f",
        "--values",
        "--version",
        "--set",
        "--set-string",
        "--kube-context",
        "--timeout",
    }
    words = _positionals(argv[1:], valued)
    if words[:2] == ["repo", "add"] and len(words) >= 3:
        repos.add(words[2])
        return
    if not words or words[0] not in ("install", "upgrade"):
        return
    if len(words) < 3:
        state.reference_errors.append(f"{command}: a release and a chart")
        return
    release, chart = words[1], words[2]
    if "/" in chart and not chart.startswith(("oci://", "./", "/")) and chart.split("/")[0] not in repos:
        state.reference_errors.append(
            f"{command}: chart repo {chart.split('/')[0]!r} was not added before (`helm repo add`)"
        )
    namespaces = _option(argv, "-n", "--namespace")
    ns = namespaces[-1] if namespaces else "default"
    if "--create-namespace" in argv:
        state.create(Ref("Namespace", "", ns), str(command))
    else:
        state.name({Ref("Namespace", "", ns)}, str(command))
    merged: dict[str, Any] = {}
    for path in _option(argv, "-f", "--values"):
        found = None if PLACEHOLDER in path else _existing(state, path)
        if found is None or not found.is_file():
            state.reference_errors.append(f"{command}: values file {path} does not exist")
            continue
        values = yaml.safe_load(found.read_text()) or {}
        merged = _merge(merged, values)
        state.name(named_objects(values, ns), f"{path} (the values of {command})")
        if chart in CHART_SCHEMAS:
            for error in sorted(values_validator(chart).iter_errors(values), key=lambda e: list(e.absolute_path)):
                where = ".".join(str(p) for p in error.absolute_path) or "(top)"
                state.values_errors.append(f"{command}: {path}: {where}: {error.message[:300]}")
    if chart in CHART_SCHEMAS and (_option(argv, "--set") or _option(argv, "--set-string")):
        state.values_errors.append(f"{command}: --set values are not checked against the schema: put them in a -f file")
    for ref in chart_objects(chart, release, ns, merged):
        state.create(ref, f"the {chart} chart, release {release} ({command})")


def _merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in override.items():
        out[key] = _merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out
