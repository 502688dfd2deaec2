"""Upstream's shared allocator test table, ported: `staging/src/k8s.io/dynamic-resource-allocation/structured/
internal/allocatortesting/allocator_testing.go`.

Each case is a data row (`builders.Case`) keyed by upstream's name, in one module per theme; `table.TABLE` is
all of them, and one parametrized test (tests/allocator/upstream/test_table.py) runs every row through
`builders.check_case`.
"""
