"""Pod routing (`/mutate-pods`): which pods go to the capacity binder, from a cache of DeviceClasses and
Namespace labels."""
