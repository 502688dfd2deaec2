"""Re-exported from the product package `localcluster` (where the harness's code lives; see cluster.py)."""

from __future__ import annotations

from localcluster.netns import *  # noqa: F403
