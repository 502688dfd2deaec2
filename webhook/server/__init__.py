"""The webhook's HTTP side: the aiohttp server (TLS, connections, envelope, limits), judging on the loop or in
workers, metrics, logs and certificate reloading. It knows no admission concern: handlers plug into it."""
