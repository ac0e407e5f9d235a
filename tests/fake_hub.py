"""A Hugging Face Hub look-alike on 127.0.0.1, for the real `huggingface_hub` client.

It answers the requests huggingface_hub 2.4.0 makes (read from its source):
- `model_info(repo, revision=..., files_metadata=True)`:
  GET /api/models/{repo}/revision/{revision}?blobs=True
  -> id, sha, siblings [{rfilename, size, blobId, lfs {sha256, size, pointerSize}}]
- `snapshot_download(repo, revision=<sha>, local_dir=...)`:
  GET /api/models/{repo}/tree/{sha}?recursive=True&expand=False
  -> [{type, path, size, oid, lfs {oid, size, pointerSize}}]
  (one page: no `Link` header), then per file
  HEAD /{repo}/resolve/{sha}/{path} -> X-Repo-Commit, ETag (LFS: the sha256; else the git blob id), Content-Length
  GET  /{repo}/resolve/{sha}/{path} -> the bytes (the client checks the length, not the sha256).
Every request is logged, so a test can tell whether anything was downloaded.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from threaded import in_thread

LFS_SUFFIXES = (".safetensors", ".bin", ".pt")  # what a real repo's .gitattributes sends to LFS


@dataclass
class FakeHub:
    repo_id: str
    commits: dict[str, dict[str, bytes]] = field(default_factory=dict)  # sha -> path -> bytes
    main: str = ""
    served: dict[tuple[str, str], bytes] = field(default_factory=dict)  # (sha, path) -> bytes served instead
    extra_listing: list[str] = field(default_factory=list)  # names listed but never served
    unlisted_blob_ids: set[str] = field(default_factory=set)  # names model_info lists without a blobId
    requests: list[tuple[str, str]] = field(default_factory=list)
    url: str = ""

    def commit(self, files: dict[str, bytes]) -> str:
        sha = hashlib.sha1(json.dumps(sorted((p, hashlib.sha256(b).hexdigest()) for p, b in files.items())).encode())
        self.commits[sha.hexdigest()] = dict(files)
        self.main = sha.hexdigest()
        return self.main

    def commit_folder(self, folder: Path) -> str:
        """Commit every file of a model folder, named relative to it, as pushing the folder to the hub would."""
        return self.commit(
            {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}
        )

    def resolve(self, revision: str) -> str | None:
        return self.main if revision == "main" else revision if revision in self.commits else None

    def downloads(self) -> list[str]:
        return [path for method, path in self.requests if method == "GET" and "/resolve/" in path]

    def _entry(self, path: str, data: bytes) -> dict:
        entry = {"size": len(data), "blob": git_blob_id(data)}
        if path.endswith(LFS_SUFFIXES):
            entry["lfs"] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data), "pointerSize": 134}
        return entry

    def listing(self, sha: str) -> list[tuple[str, dict]]:
        files = [(p, self._entry(p, b)) for p, b in sorted(self.commits[sha].items())]
        return files + [(p, self._entry(p, b"")) for p in self.extra_listing]


def git_blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\x00" % len(data) + data).hexdigest()


def _handler(hub: FakeHub) -> type[BaseHTTPRequestHandler]:
    prefix_api = f"/api/models/{hub.repo_id}/"
    prefix_resolve = f"/{hub.repo_id}/resolve/"

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:  # keep pytest output clean
            pass

        def _json(self, body: object, status: int = 200) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _missing(self, code: str) -> None:
            data = json.dumps({"error": code}).encode()
            self.send_response(404)
            self.send_header("X-Error-Code", code)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_HEAD(self) -> None:
            self._route(head=True)

        def do_GET(self) -> None:
            self._route(head=False)

        def _route(self, head: bool) -> None:
            path = urlsplit(self.path).path
            hub.requests.append((self.command, path))
            if path.startswith(prefix_api) and not head:
                kind, _, rest = path[len(prefix_api) :].partition("/")
                sha = hub.resolve(unquote(rest.split("/")[0]))
                if sha is None:
                    return self._missing("RevisionNotFound")
                listing = hub.listing(sha)
                if kind == "revision":
                    siblings = [{"rfilename": p, "size": e["size"], "blobId": e["blob"]} for p, e in listing]
                    for sibling in siblings:
                        if sibling["rfilename"] in hub.unlisted_blob_ids:
                            del sibling["blobId"]
                    for sibling, (_, e) in zip(siblings, listing, strict=True):
                        if "lfs" in e:
                            sibling["lfs"] = e["lfs"]
                    return self._json({"id": hub.repo_id, "sha": sha, "private": False, "siblings": siblings})
                if kind == "tree":
                    tree = [{"type": "file", "path": p, "size": e["size"], "oid": e["blob"]} for p, e in listing]
                    for item, (_, e) in zip(tree, listing, strict=True):
                        if "lfs" in e:
                            item["lfs"] = {"oid": e["lfs"]["sha256"], "size": e["size"], "pointerSize": 134}
                    return self._json(tree)
            if path.startswith(prefix_resolve):
                revision, _, name = path[len(prefix_resolve) :].partition("/")
                sha, name = hub.resolve(unquote(revision)), unquote(name)
                if sha is None:
                    return self._missing("RevisionNotFound")
                if name not in hub.commits[sha]:
                    return self._missing("EntryNotFound")
                listed = hub.commits[sha][name]
                data = hub.served.get((sha, name), listed)
                entry = hub._entry(name, listed)
                self.send_response(200)
                self.send_header("X-Repo-Commit", sha)
                self.send_header("ETag", f'"{entry["lfs"]["sha256"] if "lfs" in entry else entry["blob"]}"')
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if not head:
                    self.wfile.write(data)
                return None
            return self._missing("RepoNotFound")

    return Handler


@contextmanager
def serve(hub: FakeHub) -> Iterator[FakeHub]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(hub))
    hub.url = f"http://127.0.0.1:{server.server_address[1]}"
    with in_thread(server, name="fake-hub"):
        yield hub


@contextmanager
def serve_to_client(hub: FakeHub, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHub]:
    """`serve(hub)`, with the real huggingface_hub client pointed at it: HF_ENDPOINT set, and HF_HUB_OFFLINE (which
    the suite sets and huggingface_hub copies into a module constant at import time) lifted for this test only."""
    import huggingface_hub.constants

    with serve(hub):
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
        monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)  # read once, at import
        yield hub
