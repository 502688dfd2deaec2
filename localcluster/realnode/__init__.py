"""A real node (kubelet, containerd, the DRA test plugin) beside a local cluster's kwok nodes: the `realnode`
test tier and `dra-capacity sandbox --real-node` use it. `node` starts and stops one; `host` holds the
machine-wide state (lock, sysctls, leftovers); `configs` the configuration files."""
