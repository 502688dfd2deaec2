"""apimachinery-like utilities: quantities, names, field paths and errors, Go JSON values."""
