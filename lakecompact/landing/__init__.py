"""Landing: source events into hourly increment batches, exactly once."""
