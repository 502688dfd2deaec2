"""The process runtime shared by `serve`, `bind` and `certs controller`, as controller-runtime's Manager is:
their life cycle (`manager`), health, readiness and metrics on a listener of their own (`health`), JSON logs
(`logs`), stop signals (`signals`), the leader-election glue (`leader`) and one identity rule (`identity`).
It imports nothing of the project's."""
