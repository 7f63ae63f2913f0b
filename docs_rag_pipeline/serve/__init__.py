"""The serving layer: HTTP API (Flask). Thin: every route calls the query path."""
