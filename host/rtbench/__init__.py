"""rtbench: measure and compare the real-time performance of operating systems."""

__version__ = "0.1.0"
STREAM_FORMAT = 1  # newest stream format this host reads
