"""Identities of pools, devices and shares, as upstream's schedulerapi names them."""

from __future__ import annotations

from typing import NamedTuple


class PoolID(NamedTuple):
    """(driver, pool); rendered `driver/pool` as in upstream messages."""

    driver: str
    pool: str

    def __str__(self) -> str:
        return f"{self.driver}/{self.pool}"


class DeviceID(NamedTuple):
    """Upstream's DeviceID: (driver, pool, device); rendered `driver/pool/device`."""

    driver: str
    pool: str
    device: str

    def __str__(self) -> str:
        return f"{self.driver}/{self.pool}/{self.device}"

    @property
    def pool_id(self) -> PoolID:
        return PoolID(self.driver, self.pool)
