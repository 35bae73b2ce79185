"""Experiments made of several runs: A/B comparisons and campaigns
(docs/architecture.md)."""
