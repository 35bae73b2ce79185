"""Data in and out: exports (JSON, CSV, JUnit XML) and imports (rtbench
exports, cyclictest JSON)."""
