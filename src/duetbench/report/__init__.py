"""Everything a person or a CI job reads: terminal, JSON, Markdown, HTML.

Rendering only: no argument parsing (``duetbench.commands``) and no statistics
(``duetbench.analysis``). ``tables`` and ``evaluation_tables`` describe each table
once; ``formatting`` formats every number; ``terminal``, ``markdown``,
``json_docs`` and ``html`` render; ``progress`` shows a running experiment.
"""
