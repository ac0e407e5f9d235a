"""Push and pull over the OCI distribution API (distribution-spec v1.1), to any registry.

Why our own HTTP (httpx, already in the platform environment) rather than a
client library: oras-py, the maintained Python client, builds its own
manifests from files it is handed; a model image's identity is its manifest
digest, so the push must send our manifest byte for byte and our existing
blobs as they are. The protocol needed for that is small:

  HEAD /v2/<repo>/blobs/<digest>              skip what the registry has
  POST /v2/<repo>/blobs/uploads/ -> Location  then one streamed PUT ?digest= (monolithic),
                                              or PATCH chunks with Content-Range + PUT
  PUT  /v2/<repo>/manifests/<tag>             the manifest bytes, as built
  GET  manifests and blobs                    every byte held to its digest on the way in

TLS is on by default; plain HTTP only for loopback hosts (as docker and skopeo
treat them) or when asked. Credentials come from the environment
(`AI_PLATFORM_REGISTRY_USERNAME` / `_PASSWORD` for basic auth and token
requests, or `AI_PLATFORM_REGISTRY_TOKEN`), answer a Basic or Bearer
challenge, and are never logged. They go only to the registry's own host or a
token realm on a host named in `token_realms` (platform.yaml
`registry.token_realms`), and never over plain HTTP to a host that is not
loopback: a registry cannot send them elsewhere with its WWW-Authenticate.
A manifest or blob that does not hash to the digest asked for, or that the
registry's Docker-Content-Digest names otherwise, is refused. A dropped connection or a 429/5xx answer
starts that exchange (one blob or manifest) over, up to four times in all,
honouring Retry-After; any other refusal fails at once, with the registry's
own error text.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpx

from ai_platform.errors import (
    DigestMismatchError,
    ImageNotFoundError,
    ImageReferenceError,
    MalformedImageError,
    NotAnImageLayoutError,
    PlatformMismatchError,
    RegistryAuthError,
    RegistryProtocolError,
    RegistryRefusedError,
    TransientRegistryError,
)
from ai_platform.hosts import loopback
from ai_platform.oci import documents
from ai_platform.oci.documents import DOCKER_LIST as DOCKER_LIST
from ai_platform.oci.documents import DOCKER_MANIFEST as DOCKER_MANIFEST
from ai_platform.oci.documents import INDEX, INDEX_TYPES, MANIFEST, MAX_DOCUMENT
from ai_platform.oci.layout import Descriptor, OciLayout

ACCEPT = ", ".join([MANIFEST, INDEX, DOCKER_MANIFEST, DOCKER_LIST])
# Docker Hub's references say docker.io; its distribution API answers elsewhere.
API_HOSTS = {"docker.io": "registry-1.docker.io", "index.docker.io": "registry-1.docker.io"}
# Token services known to belong to a registry on another host (others: platform.yaml registry.token_realms).
KNOWN_REALMS = {"registry-1.docker.io": ("auth.docker.io",)}
REFERENCE = re.compile(
    r"^(?P<host>[a-zA-Z0-9.-]+(?::\d+)?)/(?P<repo>[a-z0-9]+(?:[._/-][a-z0-9]+)*)"
    r"(?::(?P<tag>[A-Za-z0-9_][A-Za-z0-9._-]{0,127}))?(?:@(?P<digest>sha256:[0-9a-f]{64}))?$"
)
CHUNK = 8 * 1024 * 1024
# What a registry or the network may fail once: each exchange (a blob, a manifest) is tried
# again from its start, after 0.5, 1, 2 s or the registry's Retry-After (at most 30 s).
ATTEMPTS = 4
TRANSIENT = {429, 500, 502, 503, 504}
_BODY_HEADERS = {"content-encoding", "content-length", "transfer-encoding"}


@dataclass(frozen=True)
class Reference:
    host: str
    repository: str
    tag: str | None = None
    digest: str | None = None

    @classmethod
    def parse(cls, text: str) -> Reference:
        match = REFERENCE.match(text)
        if not match:
            raise ImageReferenceError(
                f"{text!r} is not an image reference (HOST[:PORT]/REPOSITORY[:TAG][@sha256:DIGEST])"
            )
        return cls(match["host"], match["repo"], match["tag"], match["digest"])

    @property
    def target(self) -> str:
        return self.digest or self.tag or "latest"

    def __str__(self) -> str:
        return (
            f"{self.host}/{self.repository}"
            + (f":{self.tag}" if self.tag else "")
            + (f"@{self.digest}" if self.digest else "")
        )


def _is_loopback(host: str) -> bool:
    """Whether `host` (HOST[:PORT]) is this machine's loopback."""
    return loopback(urlsplit(f"//{host}").hostname or "")


@dataclass
class Transfer:
    digest: str
    blobs_sent: int = 0
    blobs_skipped: int = 0
    bytes_sent: int = 0
    skipped: list[str] = field(default_factory=list)


class RegistryClient:
    def __init__(
        self, host: str, *, insecure: bool = False, timeout_s: float = 300.0, token_realms: Iterable[str] = ()
    ) -> None:
        scheme = "http" if insecure or _is_loopback(host) else "https"
        self.base = f"{scheme}://{API_HOSTS.get(host, host)}"
        hostname = urlsplit(self.base).hostname or ""
        self.token_realms = tuple(token_realms)
        # Where the credentials may go: the registry's own host, and the token services named for it
        self.realms = {hostname, *KNOWN_REALMS.get(hostname, ()), *(h.lower() for h in self.token_realms)}
        self.http = httpx.Client(timeout=timeout_s, follow_redirects=True)
        self.username = os.environ.get("AI_PLATFORM_REGISTRY_USERNAME")
        self.password = os.environ.get("AI_PLATFORM_REGISTRY_PASSWORD")
        token = os.environ.get("AI_PLATFORM_REGISTRY_TOKEN")
        self.authorization: str | None = f"Bearer {token}" if token else None

    def close(self) -> None:
        self.http.close()

    # -- requests, answering auth challenges once

    def request(
        self, method: str, url: str, *, expect: tuple[int, ...], limit: int | None = None, **kwargs: Any
    ) -> httpx.Response:
        """One exchange; with `limit`, an answer longer than that many bytes is cut off there and refused."""
        url = urljoin(self.base + "/", url)
        given = dict(kwargs.pop("headers", {}) or {})
        for attempt in (0, 1):
            headers = {**given, **self._auth_headers()}
            try:
                if limit is None:
                    response = self.http.request(method, url, headers=headers, **kwargs)
                else:
                    response = self._capped(self.http.build_request(method, url, headers=headers, **kwargs), limit)
            except httpx.HTTPError as exc:
                raise TransientRegistryError(f"{method} {url}: {type(exc).__name__}: {exc}") from None
            if response.status_code == 401 and attempt == 0 and self._answer(response):
                continue
            if response.status_code not in expect:
                raise _refusal(f"{method} {url}", response)
            return response
        raise AssertionError("unreachable")

    def _capped(self, request: httpx.Request, limit: int) -> httpx.Response:
        """The answer to `request`, read only as far as `limit` bytes (a registry may send without end)."""
        streamed = self.http.send(request, stream=True)
        try:
            chunks, size = [], 0
            for chunk in streamed.iter_bytes(CHUNK):
                size += len(chunk)
                if size > limit:
                    raise MalformedImageError(
                        f"{request.method} {request.url}: the registry's answer is more than {limit} bytes; refused"
                    )
                chunks.append(chunk)
        finally:
            streamed.close()
        # What was read is decoded already: the copy keeps no Content-Encoding to decode it again.
        headers = [(k, v) for k, v in streamed.headers.multi_items() if k.lower() not in _BODY_HEADERS]
        return httpx.Response(streamed.status_code, headers=headers, content=b"".join(chunks), request=request)

    def retrying(self, exchange: Callable[[], Any], what: str) -> Any:
        """Run `exchange` (which must be safe to start over) until it succeeds, at most ATTEMPTS times."""
        for attempt in range(ATTEMPTS):
            try:
                return exchange()
            except TransientRegistryError as exc:
                if attempt + 1 == ATTEMPTS:
                    raise TransientRegistryError(f"{what}: gave up after {ATTEMPTS} attempts: {exc}") from None
                time.sleep(min(exc.retry_after_s if exc.retry_after_s is not None else 0.5 * 2**attempt, 30.0))
        raise AssertionError("unreachable")

    def _answer(self, response: httpx.Response) -> bool:
        challenge = response.headers.get("WWW-Authenticate", "")
        scheme, _, params = challenge.partition(" ")
        if scheme.lower() == "basic" and self.username:
            self._may_send_credentials(self.base)
            raw = f"{self.username}:{self.password or ''}".encode()
            self.authorization = f"Basic {base64.b64encode(raw).decode()}"
            return True
        if scheme.lower() == "bearer":
            fields = dict(re.findall(r'(\w+)="([^"]*)"', params))
            realm = fields.get("realm", "")
            auth = None
            if self.username:  # without credentials there is nothing to keep from a realm
                self._may_send_credentials(realm)
                auth = httpx.BasicAuth(self.username, self.password or "")
            query = {k: v for k, v in fields.items() if k in ("service", "scope")}
            try:
                got = self.http.get(realm, params=query, auth=auth)
            except httpx.HTTPError as exc:
                raise TransientRegistryError(f"token request to {realm}: {type(exc).__name__}: {exc}") from None
            if got.status_code != 200:
                raise RegistryRefusedError(f"token request to {realm}: HTTP {got.status_code}")
            self.authorization = f"Bearer {_token(realm, got)}"
            return True
        return False

    # -- blobs

    def has_blob(self, repo: str, digest: str) -> bool:
        def head() -> httpx.Response:
            return self.request("HEAD", f"/v2/{repo}/blobs/{digest}", expect=(200, 404))

        return bool(self.retrying(head, f"HEAD blob {digest}").status_code == 200)

    def upload(self, repo: str, path: Path, digest: str, size: int, chunk_size: int | None = None) -> None:
        """Upload a blob; a failed try starts a new upload session (the registry drops the old one)."""
        self.retrying(lambda: self._upload(repo, path, digest, size, chunk_size), f"upload of blob {digest}")

    def _upload(self, repo: str, path: Path, digest: str, size: int, chunk_size: int | None) -> None:
        started = self.request("POST", f"/v2/{repo}/blobs/uploads/", expect=(202,))
        location = urljoin(str(started.url), _location(started))
        if chunk_size and size > chunk_size:
            offset = 0
            with path.open("rb") as f:
                while chunk := f.read(chunk_size):
                    headers = {
                        "Content-Type": "application/octet-stream",
                        "Content-Range": f"{offset}-{offset + len(chunk) - 1}",
                    }
                    done = self.request("PATCH", location, expect=(202,), content=chunk, headers=headers)
                    location = urljoin(str(done.url), _location(done))
                    offset += len(chunk)
            self.request("PUT", _with_digest(location, digest), expect=(201,), headers={"Content-Length": "0"})
            return
        headers = {"Content-Type": "application/octet-stream", "Content-Length": str(size)}
        self.request("PUT", _with_digest(location, digest), expect=(201,), content=_stream(path), headers=headers)

    def fetch_blob(self, repo: str, digest: str, layout: OciLayout, size: int | None = None) -> int:
        """Download a blob into `layout`, held to its digest and, where known, to its size: a registry that
        sends more than `size` bytes is cut off there."""
        return int(self.retrying(lambda: self._fetch_blob(repo, digest, layout, size), f"GET blob {digest}"))

    def _fetch_blob(self, repo: str, digest: str, layout: OciLayout, size: int | None) -> int:
        url = urljoin(self.base + "/", f"/v2/{repo}/blobs/{digest}")
        try:
            with self.http.stream("GET", url, headers=self._auth_headers()) as response:
                if response.status_code == 401 and self._answer(response):
                    return self._fetch_blob(repo, digest, layout, size)
                if response.status_code != 200:
                    response.read()
                    raise _refusal(f"GET blob {digest}", response)
                named = response.headers.get("Docker-Content-Digest")
                if named and named != digest:
                    raise DigestMismatchError(
                        f"GET blob {digest} from {self.base}: the registry names it Docker-Content-Digest {named};"
                        " refused: a registry that names other bytes than it was asked for is not trusted"
                    )
                with layout.blob_writer("application/octet-stream") as writer:  # a torn download is discarded
                    for part in response.iter_bytes(CHUNK):
                        writer.write(part)
                        if size is not None and writer.size > size:
                            raise DigestMismatchError(
                                f"GET blob {digest} from {self.base}: the registry sent more than the {size} bytes"
                                " the manifest gives it; refused"
                            )
                    try:
                        writer.commit(expect=digest)
                    except DigestMismatchError as exc:
                        raise DigestMismatchError(f"GET blob {digest} from {self.base}: {exc}; refused") from None
                    return writer.size
        except httpx.HTTPError as exc:
            raise TransientRegistryError(f"GET blob {digest}: {type(exc).__name__}: {exc}") from None

    def _auth_headers(self) -> dict[str, str]:
        if not self.authorization:
            return {}
        self._may_send_credentials(self.base)
        return {"Authorization": self.authorization}

    def _may_send_credentials(self, url: str) -> None:
        """Refuse unless `url` is on the registry's host or a configured token realm's, over https (or loopback)."""
        parts = urlsplit(url)
        hostname = (parts.hostname or "").lower()
        if parts.scheme != "https" and not (parts.scheme == "http" and loopback(hostname)):
            raise RegistryAuthError(
                f"{self.base}: refusing to send the registry credentials to {url!r}: not https, and"
                f" {hostname!r} is not loopback (plain HTTP is for loopback only); credentials go over https only"
            )
        if hostname not in self.realms:
            raise RegistryAuthError(
                f"{self.base}: the registry sends the client to a token service on another host, {url!r};"
                " refusing to send the registry credentials there. If it is the registry's own token service, name"
                f" {hostname!r} in platform.yaml registry.token_realms (ai-platform image: --token-realm {hostname})"
            )


def _with_digest(location: str, digest: str) -> str:
    """Add `digest=` to an upload URL, keeping the registry's own query (e.g. `_state`)."""
    return f"{location}{'&' if '?' in location else '?'}digest={digest}"


def _stream(path: Path) -> Iterator[bytes]:
    with path.open("rb") as f:
        while chunk := f.read(CHUNK):
            yield chunk


def _refusal(what: str, response: httpx.Response) -> RegistryRefusedError | TransientRegistryError:
    message = f"{what}: HTTP {response.status_code}: {_error_text(response)}"
    if response.status_code not in TRANSIENT:
        return RegistryRefusedError(message)
    retry_after = response.headers.get("Retry-After", "")
    return TransientRegistryError(message, float(retry_after) if retry_after.isdigit() else None)


def _error_text(response: httpx.Response) -> str:
    """The registry's own words for a refusal: its `errors` (distribution-spec) if it sent them, else its text."""
    try:
        body = response.json()
    except (ValueError, RecursionError):
        body = None
    errors = body.get("errors") if isinstance(body, dict) else None
    if isinstance(errors, list) and errors and all(isinstance(e, dict) for e in errors):
        return "; ".join(f"{e.get('code')}: {e.get('message')}" for e in errors)
    return response.content[:200].decode("utf-8", "replace") or response.reason_phrase


def _token(realm: str, answer: httpx.Response) -> str:
    """The token of a token service's answer (distribution's token spec: `token`, or OAuth2's `access_token`)."""
    try:
        body = answer.json()
        got = f"JSON {type(body).__name__}".replace("NoneType", "null")
    except (ValueError, RecursionError):
        body, got = None, "not JSON"
    token = (body.get("token") or body.get("access_token")) if isinstance(body, dict) else None
    if not isinstance(token, str) or not token:  # its text is not shown: it may hold a credential after all
        raise RegistryProtocolError(
            f"token request to {realm}: the answer is not a JSON object with a token (got {got})"
        )
    return token


def _location(answer: httpx.Response) -> str:
    location: str | None = answer.headers.get("Location")
    if not location:
        raise RegistryProtocolError(
            f"{answer.request.method} {answer.url}: HTTP {answer.status_code} without a Location header"
        )
    return location


def _source(layout: OciLayout, tag: str | None) -> Descriptor:
    if not (layout.root / "index.json").is_file():
        raise NotAnImageLayoutError(f"{layout.root}: not an OCI image layout (no index.json)")
    if tag:
        return layout.resolve(tag)
    for candidate in ("latest",):
        try:
            return layout.resolve(candidate)
        except ImageNotFoundError:
            pass
    raise ImageReferenceError(f"{layout.root}: name a tag to push (LAYOUT:TAG)")


def push(
    layout: OciLayout,
    tag: str | None,
    dest: Reference,
    *,
    insecure: bool = False,
    chunk_size: int | None = None,
    workers: int = 4,
    token_realms: Iterable[str] = (),
) -> Transfer:
    """Send the tagged image's blobs the registry lacks, then its manifest as is."""
    source = _source(layout, tag)
    manifest_bytes = layout.read_blob(source, MAX_DOCUMENT)
    manifest = documents.manifest(manifest_bytes, f"{layout.root}: manifest {source.digest}")
    blobs = [Descriptor.from_json(manifest["config"]), *map(Descriptor.from_json, manifest["layers"])]
    result = Transfer(source.digest)
    client = RegistryClient(dest.host, insecure=insecure, token_realms=token_realms)
    try:

        def send(blob: Descriptor) -> tuple[Descriptor, bool]:
            if client.has_blob(dest.repository, blob.digest):
                return blob, False
            client.upload(dest.repository, layout.blob_path(blob.digest), blob.digest, blob.size, chunk_size)
            return blob, True

        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(send, blob) for blob in blobs]
            try:
                outcomes = [future.result() for future in futures]
            except BaseException:  # one blob gave up: the rest are not started
                pool.shutdown(cancel_futures=True)
                raise
            for blob, sent in outcomes:
                if sent:
                    result.blobs_sent += 1
                    result.bytes_sent += blob.size
                else:
                    result.blobs_skipped += 1
                    result.skipped.append(blob.digest)
        answer = client.retrying(
            lambda: client.request(
                "PUT",
                f"/v2/{dest.repository}/manifests/{dest.target}",
                expect=(201,),
                content=manifest_bytes,
                headers={"Content-Type": source.media_type},
            ),
            f"PUT manifest {dest}",
        )
        echoed = answer.headers.get("Docker-Content-Digest")
        if echoed and echoed != source.digest:
            raise DigestMismatchError(f"the registry stored the manifest as {echoed}, not {source.digest}")
    finally:
        client.close()
    return result


def pull(
    ref: Reference,
    layout: OciLayout,
    tag: str | None = None,
    *,
    insecure: bool = False,
    platform: tuple[str, str] | None = None,
    token_realms: Iterable[str] = (),
) -> Transfer:
    """Fetch a manifest and its blobs into a layout, every byte held to its digest.

    An image index (multi-platform) is refused unless `platform` (os, architecture)
    names the one of its manifests to fetch.
    """
    client = RegistryClient(ref.host, insecure=insecure, token_realms=token_realms)
    try:
        body, media_type = _manifest(client, ref)
        if media_type in INDEX_TYPES:
            if platform is None:
                raise ImageReferenceError(f"{ref}: an image index; pull one platform's manifest by digest")
            index = documents.index(body, f"{ref}: the registry's image index")
            ref = Reference(ref.host, ref.repository, digest=_platform_manifest(ref, index, platform))
            body, media_type = _manifest(client, ref)
            if media_type in INDEX_TYPES:
                raise ImageReferenceError(f"{ref}: an index inside an index; name the image manifest by digest")
        digest = f"sha256:{hashlib.sha256(body).hexdigest()}"
        manifest = documents.manifest(body, f"{ref}: the registry's manifest")
        result = Transfer(digest)
        for blob in [manifest["config"], *manifest["layers"]]:
            layout.blob_path(blob["digest"])  # a digest the layout cannot hold is refused before any download
        for blob in [manifest["config"], *manifest["layers"]]:
            if layout.has_blob(blob["digest"]):
                result.blobs_skipped += 1
                continue
            result.bytes_sent += client.fetch_blob(ref.repository, blob["digest"], layout, blob["size"])
            result.blobs_sent += 1
        layout.put_manifest(body, tags=[tag or ref.tag or "latest"], media_type=media_type)
    finally:
        client.close()
    return result


def _manifest(client: RegistryClient, ref: Reference) -> tuple[bytes, str]:
    found = manifest_bytes(client, ref)
    if found is None:
        raise ImageNotFoundError(f"{ref}: the registry has no such manifest")
    return found


def manifest_bytes(client: RegistryClient, ref: Reference) -> tuple[bytes, str] | None:
    """The manifest `ref` names and its media type, held to its digest; None where the registry has none."""
    got = client.retrying(
        lambda: client.request(
            "GET",
            f"/v2/{ref.repository}/manifests/{ref.target}",
            expect=(200, 404),
            headers={"Accept": ACCEPT},
            limit=MAX_DOCUMENT,
        ),
        f"GET manifest {ref}",
    )
    if got.status_code == 404:
        return None
    body = got.content
    digest = f"sha256:{hashlib.sha256(body).hexdigest()}"
    if ref.digest and digest != ref.digest:
        raise DigestMismatchError(f"{ref}: the registry answered a manifest that hashes to {digest}, not {ref.digest}")
    named = got.headers.get("Docker-Content-Digest")
    if named and named != digest:
        raise DigestMismatchError(
            f"{ref}: the registry names the manifest Docker-Content-Digest {named}, but its bytes hash to {digest}"
        )
    return body, got.headers.get("Content-Type", MANIFEST).split(";")[0]


def _platform_manifest(ref: Reference, index: dict[str, Any], platform: tuple[str, str]) -> str:
    for entry in index.get("manifests", []):
        found = entry.get("platform") or {}
        if (found.get("os"), found.get("architecture")) == platform:
            return str(entry["digest"])
    offered = sorted(
        f"{(e.get('platform') or {}).get('os')}/{(e.get('platform') or {}).get('architecture')}"
        for e in index.get("manifests", [])
    )
    raise PlatformMismatchError(
        f"{ref}: the index has no {platform[0]}/{platform[1]} manifest (it has {', '.join(offered)})"
    )
