"""The read side: views, `sql`, `status`."""
