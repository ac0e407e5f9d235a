"""`python -m ai_platform.quantize [JOB.json]`, inside the quantize environment.

Launched by Dagster Pipes (subprocess or Kubernetes pod), the job comes from the
Pipes extras and the result goes back as a custom message. Run by hand, the job
is a JSON file and the result is printed as JSON.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from ai_platform.errors import PlatformError


def main(argv: list[str]) -> int:
    from dagster_pipes import DAGSTER_PIPES_CONTEXT_ENV_VAR, open_dagster_pipes

    from ai_platform.quantize.workload import run

    if DAGSTER_PIPES_CONTEXT_ENV_VAR in os.environ:  # launched by a Pipes client
        with open_dagster_pipes() as pipes:
            log_path = pipes.extras["job"].get("log_path")
            if log_path and _messages_in_stdio():
                # In a pod the messages travel in the pod's log (stderr), which PipesK8sPodLogsMessageReader
                # reads: moving fds 1 and 2 to a file would take the messages with them, and the step would
                # see none. The libraries' output stays in the pod log, where `kubectl logs` finds it.
                pipes.log.info("workload output: this pod's log")
            elif log_path:  # the libraries' progress bars and warnings go to a file, not the run's console
                Path(log_path).parent.mkdir(parents=True, exist_ok=True)
                sink = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                os.dup2(sink, 1)
                os.dup2(sink, 2)
                pipes.log.info(f"workload output: {log_path}")
            try:
                result = run(pipes.extras["job"], pipes.log.info)
            except PlatformError as exc:  # expected: the asset raises it with this message, not "exit code 1"
                pipes.log.error(str(exc))
                result = {"error": str(exc), "error_type": type(exc).__name__}
            pipes.report_custom_message(result)
        return 0
    if len(argv) != 1:
        print("usage: python -m ai_platform.quantize JOB.json", file=sys.stderr)
        return 2
    result_out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # llm-compressor's logger writes to stdout; stdout carries the result JSON alone
    try:
        result = run(json.loads(Path(argv[0]).read_text(encoding="utf-8")), lambda m: print(m, file=sys.stderr))
    except PlatformError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(result, indent=2), file=result_out, flush=True)
    return 0


def _messages_in_stdio() -> bool:
    """Whether the Pipes client reads this process's messages from its stdout/stderr (a Kubernetes pod's log)."""
    from dagster_pipes import PipesDefaultMessageWriter, PipesEnvVarParamsLoader

    params = PipesEnvVarParamsLoader().load_messages_params()  # type: ignore[no-untyped-call]
    return PipesDefaultMessageWriter.STDIO_KEY in params or PipesDefaultMessageWriter.BUFFERED_STDIO_KEY in params


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
