"""The process runtime shared by `serve`, `bind` and `certs controller`, as controller-runtime's Manager is:
health, readiness and metrics on a listener of their own (`health`), JSON logs (`logs`), stop signals
(`signals`) and the leader-election glue (`leader`). It imports nothing of the project's."""
