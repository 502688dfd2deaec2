"""The sandbox's fallback where the real control plane cannot be built: placeholder."""
