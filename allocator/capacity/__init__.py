"""Capacity as users count it: units of a class per node and class, used and free, and headroom by placement
(`dra-capacity top` and the binder's capacity metrics)."""
