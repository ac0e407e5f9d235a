"""The OCI JSON documents the platform reads, checked before a field of them is used.

index.json, image manifests, image indexes and image configs come from layout folders handed over and from
registries' answers. Each is parsed by pydantic (its JSON parser bounds nesting and refuses invalid UTF-8) against
the fields image-spec gives it that the platform reads: a descriptor's digest has the spec's form
(`algorithm:encoded`, so never a `/` or `..` to reach outside `blobs/`), its media type is a media type and its
size a non-negative 64-bit integer; annotations map strings to strings. Fields the platform does not read are kept
as they are. A document over MAX_DOCUMENT bytes is refused before it is parsed. Any problem is a MalformedImageError
naming the document and the field.
"""

from __future__ import annotations

import re
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_core import ErrorDetails

from ai_platform.errors import MalformedImageError

MANIFEST = "application/vnd.oci.image.manifest.v1+json"
INDEX = "application/vnd.oci.image.index.v1+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
MANIFEST_TYPES = (MANIFEST, DOCKER_MANIFEST)
INDEX_TYPES = (INDEX, DOCKER_LIST)

# The size a registry must accept for a manifest (distribution-spec, "Pushing Manifests"); containerd reads no more.
MAX_DOCUMENT = 4 * 1024 * 1024
# image-spec descriptor.md: `digest ::= algorithm ":" encoded`; and its registered algorithms' encodings
# ("Registered algorithms"): lower-case hex of the hash's length, so `sha256:ABC…` is not a sha256 digest.
DIGEST = r"^[a-z0-9]+(?:[+._-][a-z0-9]+)*:[a-zA-Z0-9=_-]+$"
REGISTERED = {"sha256": re.compile(r"[a-f0-9]{64}"), "sha512": re.compile(r"[a-f0-9]{128}")}
# RFC 6838 type/subtype, as image-spec's schema checks it.
MEDIA_TYPE = r"^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}$"
WHAT = {"digest": "a digest (ALGORITHM:ENCODED, e.g. sha256:<64 hex digits>)", "mediaType": "a media type"}


class _Document(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True, frozen=True)


class Platform(_Document):
    os: str
    architecture: str


class Descriptor(_Document):
    mediaType: str = Field(pattern=MEDIA_TYPE)  # the spec's field names
    digest: str = Field(pattern=DIGEST)
    size: int = Field(ge=0, le=2**63 - 1)
    annotations: dict[str, str] | None = None
    artifactType: str | None = Field(default=None, pattern=MEDIA_TYPE)
    platform: Platform | None = None

    @field_validator("digest")
    @classmethod
    def _registered_encoding(cls, digest: str) -> str:
        algorithm, _, encoded = digest.partition(":")
        form = REGISTERED.get(algorithm)
        if form is not None and not form.fullmatch(encoded):
            raise ValueError(f"a {algorithm} digest is {form.pattern} (lower-case hex), not {encoded[:80]!r}")
        return digest


def _of_types(allowed: tuple[str, ...], what: str) -> Any:
    """A check, before any field, that a document's own mediaType (if it gives one) is one of `allowed`."""

    def check(value: Any) -> Any:
        media_type = value.get("mediaType") if isinstance(value, dict) else None
        if isinstance(media_type, str) and media_type not in allowed:
            raise ValueError(f"its mediaType is {media_type!r}, not {what}")
        return value

    return model_validator(mode="before")(check)


class Manifest(_Document):
    _types = _of_types(MANIFEST_TYPES, "an image manifest")
    mediaType: str | None = None
    artifactType: str | None = Field(default=None, pattern=MEDIA_TYPE)
    config: Descriptor
    layers: list[Descriptor]
    annotations: dict[str, str] | None = None


class Index(_Document):
    _types = _of_types(INDEX_TYPES, "an image index")
    mediaType: str | None = None
    manifests: list[Descriptor]
    annotations: dict[str, str] | None = None


class RootFs(_Document):
    diff_ids: list[str] | None = None


class ImageConfig(_Document):
    """The fields of an image config (image-spec config.md) a base image is judged by."""

    os: str | None = None
    architecture: str | None = None
    rootfs: RootFs | None = None


D = TypeVar("D", bound=_Document)


def manifest(data: bytes, where: str) -> dict[str, Any]:
    """An image manifest (OCI or Docker schema 2) as a dict whose read fields are checked."""
    return _parse(Manifest, data, where, "an image manifest").model_dump(exclude_unset=True)


def index(data: bytes, where: str, limit: int = MAX_DOCUMENT) -> dict[str, Any]:
    """An image index (index.json, a multi-platform image) as a dict whose read fields are checked."""
    return _parse(Index, data, where, "an image index", limit).model_dump(exclude_unset=True)


def image_config(data: bytes, where: str) -> dict[str, Any]:
    return _parse(ImageConfig, data, where, "an image config").model_dump(exclude_unset=True)


def _parse(model: type[D], data: bytes, where: str, what: str, limit: int = MAX_DOCUMENT) -> D:
    if len(data) > limit:
        raise MalformedImageError(f"{where}: more than the {limit} bytes {what} may have; refused unread")
    try:
        return model.model_validate_json(data)
    except ValidationError as exc:
        problems = "; ".join(_describe(e) for e in exc.errors()[:5])
        raise MalformedImageError(f"{where}: not {what}: {problems}") from None


def _describe(error: ErrorDetails) -> str:
    field = ".".join(str(part) for part in error["loc"]) or "(top level)"
    shown = repr(error["input"])
    shown = shown if len(shown) <= 80 else shown[:77] + "..."
    if error["type"] == "json_invalid":
        return error["msg"]
    if error["type"] == "value_error":
        return error["msg"].removeprefix("Value error, ")
    if error["type"] == "missing":
        return f"{field}: required field is missing"
    if error["type"] == "string_pattern_mismatch":
        return f"{field}: {shown} is not {WHAT.get(str(error['loc'][-1]), 'of the right form')}"
    if error["type"] == "model_type" and not error["loc"]:
        return f"a JSON object is expected, not {shown}"
    return f"{field}: {error['msg'].lower()} (got {shown})"
