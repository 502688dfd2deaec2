"""The real control plane's harness, re-exported: its code lives in the product package `localcluster` (the
sandbox, `dra-capacity sandbox`, runs it too, and product code never imports tests/). See docs/testing.md."""

from __future__ import annotations

from localcluster.cluster import *  # noqa: F403
from localcluster.cluster import _PLURALS as _PLURALS
