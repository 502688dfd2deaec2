"""What the cluster publishes, as the DeviceClass warnings read it: the informer cache and its immutable
views."""
