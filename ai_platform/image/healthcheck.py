"""Model image health check, shipped in every model image at /models/<name>/.ai-platform/healthcheck.py.

Standard library only (it runs inside the serving container, e.g. as a
startupProbe exec before vLLM loads): config.json parses, and every
.safetensors file is whole: its header parses and the file is exactly as long
as the header says. Exit 0 when healthy, 1 with the reasons otherwise.

    python healthcheck.py [MODEL_DIR]     (default: the folder above this script)
"""

import json
import struct
import sys
from pathlib import Path


def problems(folder: Path) -> list[str]:
    found = []
    try:
        json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        found.append(f"config.json: {exc}")
    weights = sorted(folder.rglob("*.safetensors"))
    if not weights:
        found.append("no .safetensors files")
    for path in weights:
        try:
            with path.open("rb") as f:
                (n,) = struct.unpack("<Q", f.read(8))
                header = json.loads(f.read(n))
            end = max((t["data_offsets"][1] for k, t in header.items() if k != "__metadata__"), default=0)
            if path.stat().st_size != 8 + n + end:
                found.append(f"{path.name}: {path.stat().st_size} bytes, header says {8 + n + end}")
        except (OSError, ValueError, KeyError, TypeError, struct.error) as exc:
            found.append(f"{path.name}: unreadable header: {exc}")
    return found


if __name__ == "__main__":
    here = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent
    bad = problems(here)
    print("\n".join(bad) if bad else f"{here}: healthy")
    sys.exit(1 if bad else 0)
