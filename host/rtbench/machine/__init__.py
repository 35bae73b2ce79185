"""This machine: its probe, its doctor, and the agent's build
(docs/architecture.md)."""
