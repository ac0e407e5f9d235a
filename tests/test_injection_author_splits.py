"""The three authors' generators are held-out splits (`benchmarks/injection_guard.py --split authors`): their
figures in data/injection/README.md were measured on these 2,000 samples each, so a change to a generator fails here
rather than silently moving the split under its published figures. No sample is printed or compared by text."""

from __future__ import annotations

from types import ModuleType

import pytest
from split_digest import digest

from ai_platform.demo import injection_author_t1, injection_author_t2, injection_author_t3

MEASURED = {
    injection_author_t1: "5754d8fd29c878e9b3742ea23cc6f5b90fb3134ce7f3c48f4cba74396b4a8148",
    injection_author_t2: "94d4e94bcb626bf60f88626173af972e7ef1bd7937bfca02fac7779563f8b4a6",
    injection_author_t3: "c286ef4b36708c9c2ccd801ad8e5b3e79eb9db2383e7efe34d744ebff53884d6",
}


@pytest.mark.parametrize("author", list(MEASURED), ids=lambda m: m.__name__.rsplit("_", 1)[-1])
def test_each_authors_split_is_the_one_its_figures_were_measured_on(author: ModuleType) -> None:
    assert digest(author.samples(2000)) == MEASURED[author]
