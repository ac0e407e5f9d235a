"""The raw_weights and verified_weights stages.

raw_weights pins the source: for a local source, the folder inside the platform
repo at the spec's commit (an immutable snapshot); for the hub, `revision`
resolved to a commit sha and exactly that commit downloaded. verified_weights
validates every header, hashes every file and tensor, holds them to the trusted
manifest (or to the hub's LFS sha256, and for the small files that are not in
LFS, the listing's git blob id), and records both in the warehouse.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ai_platform.artifacts import canonical_json, sha256_hex
from ai_platform.config import LocalSource
from ai_platform.errors import HubListingError
from ai_platform.records import RawWeights, SourceFile, VerifiedWeights
from ai_platform.specs import SpecSnapshot
from ai_platform.warehouse import Warehouse
from ai_platform.weights import hub, signing
from ai_platform.weights import manifest as wm
from ai_platform.weights.hashing import git_blob_id, sha256_file


def fetch_raw(snap: SpecSnapshot) -> RawWeights:
    """Pin the model's source and record path, size and sha256 of every file."""
    source = snap.spec.source
    blobs: dict[str, str] = {}  # the hub's git blob ids of the files not in LFS
    if isinstance(source, LocalSource):
        folder, commit, lfs = snap.platform.model_folder(source.path), snap.commit.sha, {}
        present = wm.scan(folder, allow_pickle=source.allow_pickle)  # picklescan runs here
    else:
        pulled = hub.download(source, snap.platform.artifacts_path / "hub")
        folder, commit, lfs, blobs = pulled.folder, pulled.commit, pulled.lfs_sha256, pulled.git_blob
        present = wm.scan(folder, allow_pickle=source.allow_pickle)
        if set(present) != set(pulled.files):  # exactly the vetted files of that commit, nothing else
            missing, extra = sorted(set(pulled.files) - set(present)), sorted(set(present) - set(pulled.files))
            raise HubListingError(
                f"{source.repo_id}@{commit}: the download does not match the vetted listing"
                f" (missing: {missing or 'none'}; unexpected: {extra or 'none'})"
            )
    files = tuple(
        SourceFile(rel, (folder / rel).stat().st_size, sha256_file(folder / rel), lfs.get(rel), blobs.get(rel))
        for rel in present
    )
    digest = sha256_hex(canonical_json([vars(f) for f in files]))
    kept = snap.platform.artifacts().keep_folder(folder)  # where the next stage finds it, from any machine
    return RawWeights(snap.spec.name, source.model_dump(mode="json"), commit, kept, files, digest)


@dataclass(frozen=True)
class Verification:
    manifest: dict[str, Any]
    digest: str
    problems: list[str]
    against: str  # what the weights were held to
    identical_to_reference: float | None  # share of tensors byte-identical to the reference manifest's
    identical_limit: float | None  # the share at which that blocks (verification.identical_fraction_limit)
    source_commit: str  # the hub commit, or the platform-repo commit for a local source
    lfs_sha256: dict[str, str | None]
    signing_manifest: dict[str, Any]  # the OpenSSF model-signing v1.0 statement, ready to sign
    signing_digest: str  # sha256 of its canonical JSON: its name in the artifact store
    signature: str | None  # the signature it was checked against, if the spec names one

    folder: str  # as the artifact store keeps it

    @property
    def passed(self) -> bool:
        return not self.problems

    @property
    def record(self) -> VerifiedWeights:
        return VerifiedWeights(self.folder, self.digest, self.source_commit, self.signing_digest)


def verify(snap: SpecSnapshot, raw: RawWeights) -> Verification:
    store = snap.platform.artifacts()
    folder = store.folder(raw.folder)
    actual = wm.build_manifest(folder, allow_pickle=snap.spec.source.allow_pickle)
    problems: list[str] = []
    trusted_path = snap.spec.verification.manifest
    if trusted_path:
        problems += wm.compare(actual, wm.load(snap.platform.file(trusted_path)))
        against = f"trusted manifest {trusted_path}"
    else:  # what raw_weights pinned (and, for the hub, its LFS sha256 and git blob ids)
        pinned = {f.path: f for f in raw.files}
        for entry in actual["files"]:
            want = pinned.get(entry["path"])
            for key in ("sha256", "lfs_sha256"):
                expected = getattr(want, key) if want else None
                if expected and expected != entry["sha256"]:
                    problems.append(f"{entry['path']}: sha256 {entry['sha256'][:12]}… != {key} {expected[:12]}…")
            if want and want.git_blob and (blob := git_blob_id(folder / entry["path"])) != want.git_blob:
                problems.append(
                    f"{entry['path']}: git blob {blob[:12]}… != the hub's git blob id {want.git_blob[:12]}…"
                )
        if set(pinned) != {f["path"] for f in actual["files"]}:
            problems.append("the file list changed since raw_weights pinned it")
        hub_ids = [
            name
            for name, key in (("LFS sha256", "lfs_sha256"), ("git blob ids", "git_blob"))
            if any(getattr(f, key) for f in raw.files)
        ]
        against = f"the hub's {' and '.join(hub_ids)}" if hub_ids else "raw_weights' hashes"
    fraction, limit = None, None
    if snap.spec.verification.reference_manifest:
        fraction = wm.identical_fraction(actual, wm.load(snap.platform.file(snap.spec.verification.reference_manifest)))
        limit = snap.spec.verification.identical_fraction_limit
        problems += wm.not_a_fine_tune(fraction, limit)
    statement = signing.statement(actual, snap.spec.name, allow_symlinks=signing.has_symlinks(folder, actual))
    signature = snap.spec.verification.signature
    if signature:  # raises when model-signing is missing: a named signature never passes unchecked
        problems += signing.verify_signature(folder, statement, signature, snap.platform.root)
    lfs = {f.path: f.lfs_sha256 for f in raw.files}
    store.put_json(actual)  # the quantize stage re-hashes its inputs against this manifest
    return Verification(
        actual,
        wm.digest(actual),
        problems,
        against,
        fraction,
        limit,
        raw.commit,
        lfs,
        statement,
        store.put_json(statement),
        signature.path if signature else None,
        raw.folder,
    )


def record(warehouse: Warehouse, snap: SpecSnapshot, result: Verification) -> None:
    """weight_files and tensor_hashes rows for this manifest, in one short transaction."""
    files = [
        [
            result.digest,
            snap.spec.name,
            result.source_commit,
            f["path"],
            f["size"],
            f["sha256"],
            result.lfs_sha256.get(f["path"]),
        ]
        for f in result.manifest["files"]
    ]
    tensors = [
        [result.digest, f["path"], t["name"], t["dtype"], t["shape"], t["data_begin"], t["data_end"], t["sha256"]]
        for f in result.manifest["files"]
        for t in f.get("tensors", [])
    ]
    with warehouse.write() as con:
        con.execute("DELETE FROM tensor_hashes WHERE manifest_digest = ?", [result.digest])
        con.execute("DELETE FROM weight_files WHERE manifest_digest = ?", [result.digest])
        con.executemany(
            "INSERT INTO weight_files (manifest_digest, model, source_commit, path, size_bytes, sha256,"
            " lfs_sha256) VALUES (?, ?, ?, ?, ?, ?, ?)",
            files,
        )
        if tensors:
            con.executemany("INSERT INTO tensor_hashes VALUES (?, ?, ?, ?, ?, ?, ?, ?)", tensors)
