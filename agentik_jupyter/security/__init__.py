"""Trust decisions in one place: what is masked before it leaves, and which project files are trusted.

`scrub` masks the key and secret-looking values at the boundary every output passes;
`pieces` masks any 12-character part of a secret (a value cut short rebuilds nothing);
`urls` shows URLs without their credentials and tells the scrubber what those are;
`stream` does the same for text that arrives in pieces (a key split across deltas);
`trust` decides whether a project file (an `mcp.json` beside a notebook) may act;
`invisible` shows characters a reader cannot see (Trojan Source) as badges on everything the user approves.
`proc_hide` wipes secrets from what /proc shows of this process and makes it non-dumpable (the Jupyter server).
"""
