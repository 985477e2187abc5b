"""Trust decisions in one place: what is masked before it leaves, and which project files are trusted.

`scrub` masks the key and secret-looking values at the boundary every output passes;
`trust` decides whether a project file (an `mcp.json` beside a notebook) may act.
"""
