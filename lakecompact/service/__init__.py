"""`lakecompact run`: one Spark session that lands on an interval and compacts tables by a policy, watched
through a Prometheus endpoint and a JSON status file."""
