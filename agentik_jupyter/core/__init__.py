"""The turn engine: a session, its tool-call loop, the stores the widgets read, and the chat route."""
