"""Moved to `ecomrlve.testing` (split by topic: `fuzzer`, `episode_check`, `leaks`); this name
stays for the tests that import it."""

from ecomrlve.testing.episode_check import *  # noqa: F403
from ecomrlve.testing.fuzzer import *  # noqa: F403
from ecomrlve.testing.leaks import *  # noqa: F403
