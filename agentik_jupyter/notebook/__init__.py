"""The agent on the notebook itself: read its cells, export what the agent did, mentions, project instructions."""
