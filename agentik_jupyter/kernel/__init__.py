"""The agent's life inside the IPython kernel: magics, notebook-context tools, approval."""
