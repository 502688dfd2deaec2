"""The scheduling side: structured DRA allocation with consumable capacity, extended-resource claim synthesis
(KEP-5004) with KEP-6406 capacity, and pod placement."""
