"""CA and serving certificates for the webhook (cryptography)."""
