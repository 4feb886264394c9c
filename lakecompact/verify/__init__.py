"""`lakecompact verify`: the lake's views against the source database (docs/design.md "Verify")."""
