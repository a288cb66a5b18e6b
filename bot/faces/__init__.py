"""The faces: Slack (Bolt), the HTTP server, the CLI, doctor and the report workers.

The top floor: everything may be imported here, nothing imports it.
"""
