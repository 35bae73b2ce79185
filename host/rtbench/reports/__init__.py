"""Reports of stored runs: terminal now; HTML, Markdown, JSON and JUnit later."""
