"""Full weights verification vs `sha256sum` and vs the per-tensor `.numpy().tobytes()` approach.

Generates a multi-file safetensors model (default 2 GiB in 4 shards, written by
the safetensors library), warms the page cache, then times in one run:
  ours      header validation + file sha256 + per-tensor sha256 (ai_platform.weights.hashing)
  sha256sum coreutils over the same files (one hash of every byte, single-threaded)
  openssl   `openssl dgst -sha256` over the same files (the same, with OpenSSL's SHA code)
  tobytes   safetensors load + tensor.numpy().tobytes() + sha256 per tensor (the usual approach)
and reports peak RSS of ours, measured in a child process.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from benchmarks.support import SMOKE_HELP  # noqa: E402

OURS = """
import json, sys, time
from pathlib import Path
from ai_platform.weights.hashing import hash_files
def peak_rss_mib():  # VmHWM, not ru_maxrss: Linux carries ru_maxrss over from the parent across fork+exec
    line = next(l for l in open("/proc/self/status") if l.startswith("VmHWM:"))
    return int(line.split()[1]) / 1024
paths = [Path(p) for p in sys.argv[1:]]
t = time.perf_counter()
result = hash_files(paths)
elapsed = time.perf_counter() - t
print(json.dumps({"seconds": elapsed, "tensors": sum(len(r.tensors) for r in result),
                  "peak_rss_mib": peak_rss_mib()}))
"""


def generate(folder: Path, total_mib: int, shards: int) -> list[Path]:
    import numpy as np
    from safetensors.numpy import save_file

    rng = np.random.default_rng(0)
    per_shard = total_mib * 1024 * 1024 // shards
    paths = []
    for s in range(shards):
        tensors, left, i = {}, per_shard, 0
        while left > 0:
            n = min(left, 64 * 1024 * 1024) // 2  # bf16-sized elements as uint16
            tensors[f"layer.{s}.{i}.weight"] = rng.integers(0, 2**16, size=n, dtype=np.uint16)
            left -= n * 2
            i += 1
        path = folder / f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
        save_file(tensors, str(path))
        paths.append(path)
    return paths


def tobytes(paths: list[Path]) -> float:
    from safetensors.torch import load_file

    t = time.perf_counter()
    for path in paths:
        hashlib.sha256(path.read_bytes()).hexdigest()
        for tensor in load_file(str(path)).values():
            hashlib.sha256(tensor.cpu().numpy().tobytes()).hexdigest()
    return time.perf_counter() - t


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=2048)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    args = parser.parse_args()
    if args.smoke:
        args.mib, args.shards = 16, 2
    with tempfile.TemporaryDirectory() as tmp:
        paths = generate(Path(tmp), args.mib, args.shards)
        subprocess.run(["cat", *map(str, paths)], stdout=subprocess.DEVNULL, check=True)  # warm the page cache
        t = time.perf_counter()
        subprocess.run(["sha256sum", *map(str, paths)], stdout=subprocess.DEVNULL, check=True)
        floor = time.perf_counter() - t
        t = time.perf_counter()
        subprocess.run(["openssl", "dgst", "-sha256", *map(str, paths)], stdout=subprocess.DEVNULL, check=True)
        openssl = time.perf_counter() - t
        out = subprocess.run(
            [sys.executable, "-c", OURS, *map(str, paths)], capture_output=True, text=True, check=True, cwd=ROOT
        )
        ours = json.loads(out.stdout)
        naive = tobytes(paths)
    mine = ours["seconds"]
    print(f"model: {args.mib} MiB in {args.shards} shards, {ours['tensors']} tensors (page cache warm)")
    print(f"{'run':52} {'seconds':>8} {'ratio to ours':>14}")
    for label, seconds in (
        ("ours: headers + file sha256 + per-tensor sha256", mine),
        ("baseline sha256sum (coreutils): file sha256 only", floor),
        ("baseline openssl dgst -sha256: file sha256 only", openssl),
        ("baseline tobytes: load + .numpy().tobytes() each", naive),
    ):
        print(f"{label:52} {seconds:>8.2f} {seconds / mine:>14.2f}")
    print(f"peak RSS of ours (VmHWM of its process): {ours['peak_rss_mib']:.0f} MiB")


if __name__ == "__main__":
    main()
