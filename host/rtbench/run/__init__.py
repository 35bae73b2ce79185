"""Measuring a run: the agent request, the measuring path (journal,
session, recovery), suites and soak settings (docs/architecture.md)."""
