"""`python -m ai_platform.cli`: the same as `ai-platform`."""

import sys

from ai_platform.cli import main

sys.exit(main())
