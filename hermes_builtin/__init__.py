"""The built-in tools of hermes-tools, shipped as one ordinary plugin (entry point ``builtin``)."""
