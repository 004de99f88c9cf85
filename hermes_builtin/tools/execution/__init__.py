"""Tools that run code: terminal, process and execute_code (all through the sandbox)."""
