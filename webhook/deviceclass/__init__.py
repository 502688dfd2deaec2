"""DeviceClass admission (`/validate`, `/mutate`): KEP-6406's rules, the native-rule findings, the gate drops,
and the cluster-aware warnings and Events."""
