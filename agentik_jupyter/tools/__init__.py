"""Tools: the registry and `@tool`, argument checks, approval, and the built-in tools on the kernel's data."""
