"""The lake's state: every path of a table and of a database, the files under them (storage, manifests), the
metastore's objects (the catalog), the table model and its partition numbers, and the views' DDL. The pipeline's
stages use it; it uses none of them (docs/design.md "Layers")."""
