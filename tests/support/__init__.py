"""Helpers shared by the tests (builders, harnesses, fixtures' machinery), imported as `support.<module>`:
`tests/` is on the path through pytest's `pythonpath`, and test modules are imported by path
(`--import-mode=importlib`), so no test edits `sys.path`."""
