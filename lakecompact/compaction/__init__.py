"""Compaction: base vN + pending increments into base vN+1, swapped in atomically per bucket."""
