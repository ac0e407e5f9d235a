"""How long-running library code reports progress: a callable that takes one line.

The asset layer passes `context.log.info`, the CLI a print to stderr, tests `print`.
"""

from collections.abc import Callable

Log = Callable[[str], None]
