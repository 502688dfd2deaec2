"""The `dra-capacity` command: a thin entry point that dispatches to the webhook and allocator commands."""
