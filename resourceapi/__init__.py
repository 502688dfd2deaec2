"""Shared vocabulary of dra-capacity: typed API objects, quantities, names, feature gates and the DRA CEL
environment. No I/O; imported by `webhook` and `allocator`, never the other way round."""
