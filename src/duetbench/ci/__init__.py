"""Comparing versions from git in CI: `duet gate` (base vs head) and `duet bisect`
(docs/history.md, "Gate" and "Bisect"). ``trees.py`` checks revisions out as git
worktrees and builds them; ``gate.py`` runs one comparison of two trees with the
stopping rules of docs/adaptive.md; ``bisect.py`` drives the search over history."""
