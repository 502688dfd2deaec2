"""When a certificate is due for renewal: at two thirds of its life, as cert-manager renews by default.

The CA and the serving certificate follow the same rule; the serving certificate is never issued to outlive
its CA (certs/authority.py), so a CA renewed at two thirds of five years leaves room for a full leaf.
"""

from __future__ import annotations

import datetime

from cryptography import x509

RENEW_AT = 2 / 3


def renewal_time(cert: x509.Certificate) -> datetime.datetime:
    """The instant at two thirds of the way from notBefore to notAfter."""
    start, end = cert.not_valid_before_utc, cert.not_valid_after_utc
    return start + (end - start) * RENEW_AT


def renewal_due(cert: x509.Certificate, now: datetime.datetime) -> bool:
    return now >= renewal_time(cert)


def expired(cert: x509.Certificate, now: datetime.datetime) -> bool:
    return now >= cert.not_valid_after_utc


def remaining(cert: x509.Certificate, now: datetime.datetime) -> datetime.timedelta:
    return cert.not_valid_after_utc - now


def describe_remaining(delta: datetime.timedelta) -> str:
    """`expired 3 days ago`, `expires in 12 days`, `expires in 5 hours`: for messages."""
    seconds = int(delta.total_seconds())
    past = seconds < 0
    seconds = abs(seconds)
    if seconds >= 2 * 86400:
        amount = f"{seconds // 86400} days"
    elif seconds >= 2 * 3600:
        amount = f"{seconds // 3600} hours"
    else:
        amount = f"{max(seconds // 60, 0)} minutes"
    return f"expired {amount} ago" if past else f"expires in {amount}"
