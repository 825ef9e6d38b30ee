"""Use cases shared by more than one app (the API, the dashboard, the CLIs)."""
