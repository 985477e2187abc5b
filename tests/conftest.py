"""Shared fixtures; the fake LLM server fixtures come from the public pytest plugin."""

pytest_plugins = ["agentik_jupyter.testing.pytest_plugin"]
