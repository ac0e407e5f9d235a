"""Download one commit of a Hugging Face Hub repository, after vetting its file listing.

The order matters: `revision` is resolved to a commit sha with
`model_info(files_metadata=True)` (which also carries each file's LFS sha256),
the listing is checked (no names that leave the snapshot, no pickles unless
opted in, a git blob id for every file not in LFS) and filtered by `allow_patterns`, and only then are files fetched,
at the sha, never at the moving `revision`.

`snapshot_download` lists the tree a second time (`/api/models/{repo}/tree/{sha}`)
and the hub could answer differently than it did to `model_info`; so it is
given the vetted names themselves, escaped into exact patterns, and what lands
on disk is compared with them by the caller.
"""

from __future__ import annotations

import glob
import os
import re
from pathlib import Path
from typing import NamedTuple

from ai_platform.config import HubSource
from ai_platform.errors import HubError, HubListingError, NoWeightsError, PickleNotAllowedError, UnsafeRepoPathError
from ai_platform.weights import pickles

COMMIT_SHA = re.compile(r"[0-9a-f]{40}")
GIT_BLOB = COMMIT_SHA  # a git object id: sha1, 40 hex digits


class HubSnapshot(NamedTuple):
    commit: str
    folder: Path
    files: list[str]  # the vetted names, all that may be in the folder
    lfs_sha256: dict[str, str]  # the hub's sha256 for LFS files (small git files have none)
    git_blob: dict[str, str]  # the hub's git blob id for the rest: config, tokenizer, chat template


def safe_repo_path(name: str) -> bool:
    """A listed name that stays inside the snapshot once joined to the download folder."""
    if not name or name.startswith("/") or "\\" in name or "\x00" in name:
        return False  # absolute, or a separator/terminator some layer would reinterpret
    return all(part not in ("", ".", "..") for part in name.split("/"))


def _endpoint() -> str | None:
    # huggingface_hub copies HF_ENDPOINT into a module constant at import time; read it per
    # call so that the variable set when the download runs is the one that counts.
    return os.environ.get("HF_ENDPOINT") or None


def download(source: HubSource, dest_root: Path) -> HubSnapshot:
    """Resolve `source.revision`, vet the listing, download exactly that commit's allowed files."""
    from huggingface_hub import HfApi, snapshot_download
    from huggingface_hub.utils._paths import filter_repo_objects

    where = f"{source.repo_id}@{source.revision}"
    endpoint = _endpoint()
    try:
        info = HfApi(endpoint=endpoint).model_info(source.repo_id, revision=source.revision, files_metadata=True)
    except Exception as exc:  # the client raises httpx's and its own error trees; report either the same way
        raise HubError(f"{where}: cannot read the repository from the hub ({type(exc).__name__}: {exc})") from None
    sha = info.sha or ""
    if not COMMIT_SHA.fullmatch(sha):
        raise HubListingError(f"{where}: the hub returned no commit sha (got {sha!r})")
    siblings = info.siblings or []
    unsafe = sorted(s.rfilename for s in siblings if not safe_repo_path(s.rfilename))
    if unsafe:
        raise UnsafeRepoPathError(
            f"{where} ({sha}): the listing names files outside the snapshot: "
            f"{', '.join(map(repr, unsafe))}; nothing was downloaded"
        )
    wanted = sorted(filter_repo_objects([s.rfilename for s in siblings], allow_patterns=source.allow_patterns))
    if not wanted:
        raise NoWeightsError(f"{where} ({sha}): no file matches allow_patterns {source.allow_patterns}")
    pickled = [name for name in wanted if pickles.is_pickle(name)]
    if pickled and not source.allow_pickle:
        raise PickleNotAllowedError(
            f"{where} ({sha}): pickle-based weights are refused ({', '.join(pickled)}); opt in with"
            " source.allow_pickle to accept a clean picklescan report; nothing was downloaded"
        )
    lfs = {s.rfilename: s.lfs.sha256 for s in siblings if s.lfs and s.rfilename in wanted}
    # The small files (config.json, the tokenizer, the chat template) steer what the weights do; the
    # listing's git blob id (sha1 of "blob <len>\0<bytes>") is what holds them to the commit.
    blobs = {s.rfilename: s.blob_id for s in siblings if not s.lfs and s.rfilename in wanted}
    unlisted = sorted(name for name, blob in blobs.items() if not (blob and GIT_BLOB.fullmatch(blob)))
    if unlisted:
        raise HubListingError(
            f"{where} ({sha}): the listing gives no git blob id for {', '.join(unlisted)}, so they could not be"
            " checked; nothing was downloaded (the Hugging Face Hub lists one for every file)"
        )
    folder = Path(dest_root) / source.repo_id.replace("/", "--") / sha
    try:
        snapshot_download(
            source.repo_id,
            revision=sha,
            allow_patterns=[glob.escape(name) for name in wanted],
            local_dir=folder,  # resumable: partial files wait in <folder>/.cache/huggingface
            cache_dir=Path(dest_root) / ".hf-cache",  # its refs and tree cache stay with our artifacts
            endpoint=endpoint,
        )
    except Exception as exc:  # same as above: one clear error for any client failure
        raise HubError(f"{where} ({sha}): download failed ({type(exc).__name__}: {exc})") from None
    return HubSnapshot(sha, folder, wanted, lfs, {name: str(blob) for name, blob in blobs.items()})
