"""Moved to `ecomrlve.testing.env_tasks` (tests and benchmarks share it without sys.path
edits); this name stays for the tests that import it."""

from ecomrlve.testing.env_tasks import *  # noqa: F403
from ecomrlve.testing.env_tasks import _first  # noqa: F401
