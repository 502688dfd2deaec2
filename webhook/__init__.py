"""The apiserver side: DeviceClass admission (validation, gate drop-on-disable) served over HTTPS."""
