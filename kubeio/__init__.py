"""Cluster I/O shared by every part that talks to the API server: a JSON view of the API over the official
`kubernetes` client (`kube`), list+watch caches (`informer`) and Lease leader election (`election`).

It sits below `webhook/`, `binder/` and `certs/`, above `resourceapi/` (which does no I/O); the
allocator core never imports it.
"""
