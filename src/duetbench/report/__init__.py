"""Everything a person or a CI job reads: terminal, JSON, Markdown, HTML."""
