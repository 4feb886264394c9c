"""Source schemas: Kafka Connect / Avro schemas into table columns, Spark types and decode expressions."""
